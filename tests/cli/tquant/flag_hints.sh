# compressed-tensors output is a directory: the library says so, tquant names -o DIR
# (src/cli/option_hint.h).
tquant "$TD/tiny.safetensors" --scheme int8 --format compressed-tensors -o - 2>&1; echo "rc=$?"
