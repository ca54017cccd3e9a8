# A sharded model (a directory) becomes one file.
tconvert -q "$TD/sharded" -o model.safetensors && tinfo model.safetensors && tinfo diff "$TD/sharded" model.safetensors | tail -n 1
