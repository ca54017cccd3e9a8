# --device cuda is refused with exit 5, never run on the CPU under a GPU's name: no tool
# has a GPU code path yet, and this machine (or this build) has no CUDA device.
tquant "$TD/tiny.safetensors" --scheme int8 --device cuda -o q.safetensors
