# An unknown scheme is a usage error that lists the valid ones.
tquant "$TD/tiny.safetensors" --scheme int17 -o q.safetensors
