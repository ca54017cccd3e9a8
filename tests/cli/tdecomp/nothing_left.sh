# Nothing is left once the tensors a method cannot take are skipped: a usage error that
# names the flag that selects tensors.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" model m.safetensors
tdecomp cp m.safetensors --rank 2 --exclude a.weight --exclude conv -o d.safetensors
