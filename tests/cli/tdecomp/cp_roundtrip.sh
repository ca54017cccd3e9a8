# CP of an exact rank-3 tensor: the documented part names, metadata, and a reconstruction
# within 1e-4 in the original dtype.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" cp x.safetensors
tdecomp cp x.safetensors --rank 3 --seed 5 -q -o d.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names d.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" meta d.safetensors x method ranks shape dtype factor_dtype seed converged
tdecomp reconstruct d.safetensors -o y.safetensors -q
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names y.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error x.safetensors y.safetensors x 1e-4
