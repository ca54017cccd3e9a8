# --compress zstd:LEVEL writes zstd-filtered HDF5 (filter 32015) that h5py reads back.
tconvert -q "$TD/tiny.safetensors" --compress zstd:9 -o c.h5 && tinfo diff "$TD/tiny.safetensors" c.h5 | tail -n 1
"$PY" -c "
import h5py, hdf5plugin
f = h5py.File(\"c.h5\", \"r\")
print(sorted(set(str(k) for n in [\"embed.weight\"] for k in f[n]._filters)))
"
