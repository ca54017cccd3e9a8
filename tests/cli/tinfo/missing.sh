# A missing file: I/O error, exit 4, one line naming the file.
tinfo nope.safetensors
