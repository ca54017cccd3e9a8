# HDF5 to stdout and back in from stdin.
tconvert -q "$TD/tiny.safetensors" --format hdf5 -o - | tconvert -q - -o - | tinfo diff "$TD/tiny.safetensors" -
