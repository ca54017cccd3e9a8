# With no file, tinfo reads stdin.
cat "$TD/tiny.safetensors" | tinfo
