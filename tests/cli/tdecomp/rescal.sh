# RESCAL of a planted nonnegative model: A and R as documented, fit within 1e-3.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" rescal r.safetensors
tdecomp rescal r.safetensors --rank 3 --seed 1 -q -o d.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names d.safetensors
tdecomp reconstruct d.safetensors -q -o y.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error r.safetensors y.safetensors rel 1e-3
