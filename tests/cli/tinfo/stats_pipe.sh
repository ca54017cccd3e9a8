# Statistics work on a pipe: the data are read sequentially.
cat "$TD/tiny.safetensors" | tinfo --stats -t "layers.*" -t special
