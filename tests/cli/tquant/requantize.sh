# A quantized file is not quantized again: its scales and codebooks are not weights.
tquant "$TD/sharded" --scheme kmeans:3 -q -o q.safetensors >/dev/null
tquant q.safetensors --scheme int4 -o qq.safetensors
