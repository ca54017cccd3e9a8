# A sharded model whose shard was replaced by a FIFO: tinfo and tconvert refuse it with
# exit 3 naming the shard, at once, instead of waiting for a writer that never comes.
mkdir m
tconvert -q "$TD/tiny.safetensors" --max-shard-size 600B -o m/model.safetensors
rm m/model-00002-of-00003.safetensors
mkfifo m/model-00002-of-00003.safetensors
timeout 5 tinfo m; echo "tinfo: rc=$?"
timeout 5 tinfo m/model.safetensors.index.json; echo "tinfo index: rc=$?"
timeout 5 tconvert m -o out.safetensors; echo "tconvert: rc=$?"
ls out.safetensors 2>/dev/null || echo "no output"
