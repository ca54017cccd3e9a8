# --shape tensorises first; reconstruct restores the original shape; tt-round re-compresses.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" hilbert h.npy
tdecomp tt h.npy --shape 16,16,16 --tol 1e-8 -q -o d.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" tt d.safetensors h
tdecomp tt-round d.safetensors --max-rank 2 -q -o r.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" meta r.safetensors h ranks
tdecomp reconstruct d.safetensors -q -o y.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names y.safetensors
