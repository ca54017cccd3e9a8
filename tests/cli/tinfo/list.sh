# List a file: a header line and an aligned table.
cd "$TD" && tinfo tiny.safetensors
