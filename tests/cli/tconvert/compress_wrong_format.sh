# --compress applies to HDF5 output only.
tconvert "$TD/tiny.safetensors" --compress zstd -o c.safetensors
