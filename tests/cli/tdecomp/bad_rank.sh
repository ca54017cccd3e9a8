# Rank <= 0 is a usage error, before anything is read.
tdecomp cp missing.safetensors --rank 0 -o d.safetensors
