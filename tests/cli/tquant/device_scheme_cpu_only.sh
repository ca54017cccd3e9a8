# A scheme with no GPU path, named under --device cuda, exits 5 naming it where a GPU is
# there; without one the missing device is said first. Under cpu and auto it runs.
tquant "$TD/tiny.safetensors" --scheme kmeans:4 --device cpu -o a.safetensors >/dev/null || exit 11
tquant "$TD/tiny.safetensors" --scheme kmeans:4 --device cuda:0 -o b.safetensors
