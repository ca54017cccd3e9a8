# A failed write to stdout (full disk) is an I/O error, exit 4.
tconvert "$TD/tiny.safetensors" -o - > /dev/full
