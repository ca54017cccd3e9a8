# Tucker has a GPU path, but not on a device that is not there: exit 5 with the reason,
# before the input is read.
tdecomp tucker missing.safetensors --ranks 3,3,3 --device cuda:99 -o d.safetensors
