# More ranks than the tensor has modes.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" cp x.safetensors
tdecomp tucker x.safetensors --ranks 2,2,2,2 -o d.safetensors
