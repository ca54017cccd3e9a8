# --device cuda on a machine (or build) without a CUDA device is refused with exit 5
# before any work, never run on the CPU under a GPU's name.
tquant "$TD/tiny.safetensors" --scheme int8 --device cuda -o q.safetensors
rc=$?
[ ! -e q.safetensors ] || exit 11
exit $rc
