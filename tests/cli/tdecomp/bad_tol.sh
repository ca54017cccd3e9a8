# --tol must lie strictly between 0 and 1.
tdecomp tucker missing.safetensors --tol 1.5 -o d.safetensors
