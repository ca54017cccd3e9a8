# Extracting a tensor the container does not hold is a usage error.
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
tcompress -q m.safetensors -o m.tkz
tcompress -d -t nope m.tkz -o x.npy
