# The summary goes to stderr; -q silences it; stdout stays empty with -o FILE.
tconvert "$TD/tiny.safetensors" -o a.h5
tconvert -q "$TD/tiny.safetensors" -o b.h5 2> quiet.err
[ -s quiet.err ] && exit 10
tinfo a.h5 b.h5 | grep -c "hdf5, 6 tensors"
