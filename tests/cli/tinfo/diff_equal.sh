# A file compared with a converted copy of itself: all equal, exit 0.
tconvert -q "$TD/tiny.safetensors" -o copy.h5 && tinfo diff "$TD/tiny.safetensors" copy.h5
