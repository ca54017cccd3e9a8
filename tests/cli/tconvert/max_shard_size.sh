# --max-shard-size writes shards and an index as transformers does, which read back as
# the model; it needs a .safetensors name, and safetensors output.
tconvert -q "$TD/tiny.safetensors" --max-shard-size 600B -o model.safetensors
ls model*
tinfo diff -q "$TD/tiny.safetensors" model.safetensors.index.json && echo "the shards read back as the model"
tconvert "$TD/tiny.safetensors" --max-shard-size 600B -o - 2>&1 | head -1; echo "rc=$?"
tconvert "$TD/tiny.safetensors" --max-shard-size 600B -o m.h5 2>&1; echo "rc=$?"
tconvert "$TD/tiny.safetensors" --max-shard-size 0 -o z.safetensors 2>&1; echo "rc=$?"
# The shards' directory is created, with its missing parents, as save_pretrained does.
tconvert -q "$TD/tiny.safetensors" --max-shard-size 600B -o new/dir/model.safetensors && ls new/dir
