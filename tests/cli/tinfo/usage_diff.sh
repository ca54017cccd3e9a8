# tinfo diff needs two files.
tinfo diff "$TD/tiny.safetensors"
