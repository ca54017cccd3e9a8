# RESCAL has no GPU path: --device cuda exits 5 with one line, saying either that there
# is no device to run on or that RESCAL has no GPU path, and writes nothing.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" rescal x.safetensors
tdecomp rescal x.safetensors --rank 3 --device cuda -o d.safetensors
