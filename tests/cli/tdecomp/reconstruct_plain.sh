# reconstruct needs a tdecomp output.
tdecomp reconstruct "$TD/tiny.safetensors" -o y.safetensors
