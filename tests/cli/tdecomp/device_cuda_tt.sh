# TT-SVD has no GPU path: --device cuda exits 5 with one line, saying either that there
# is no device to run on or that TT-SVD has no GPU path, and writes nothing.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker x.safetensors
tdecomp tt x.safetensors --tol 0.1 --device cuda -o d.safetensors
