# safetensors -> HDF5 -> safetensors is bit-exact: tinfo diff finds every tensor equal.
tconvert "$TD/tiny.safetensors" -o a.h5 && tconvert a.h5 -o b.safetensors && tinfo diff "$TD/tiny.safetensors" b.safetensors
