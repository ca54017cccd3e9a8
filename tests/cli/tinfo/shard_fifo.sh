# A sharded model whose shard was replaced by a FIFO: tinfo and tconvert refuse it with
# exit 3 naming the shard, at once, instead of waiting for a writer that never comes.
# Peak memory of each hostile run stays under 256 MB (GNU time, where installed).
peak() {
  [ -x /usr/bin/time ] || { "$@"; return; }
  /usr/bin/time -f %M -o peak.kb "$@"; local rc=$?
  [ "$(tail -1 peak.kb)" -lt 262144 ] || echo "peak $(tail -1 peak.kb) KB, over 256 MB"
  return $rc
}
mkdir m
tconvert -q "$TD/tiny.safetensors" --max-shard-size 600B -o m/model.safetensors
rm m/model-00002-of-00003.safetensors
mkfifo m/model-00002-of-00003.safetensors
peak timeout 5 tinfo m; echo "tinfo: rc=$?"
peak timeout 5 tinfo m/model.safetensors.index.json; echo "tinfo index: rc=$?"
peak timeout 5 tconvert m -o out.safetensors; echo "tconvert: rc=$?"
ls out.safetensors 2>/dev/null || echo "no output"
