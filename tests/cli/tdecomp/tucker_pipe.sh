# The pipe of the documentation: Tucker with an error bound, straight into reconstruct.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker x.safetensors
tdecomp tucker x.safetensors --tol 1e-3 -q -o - | tdecomp reconstruct - -o y.safetensors -q
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names y.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error x.safetensors y.safetensors x 1e-3
