# With --max-shard-size, the shard and index names are the tool's own: one that is a
# symbolic link (to /dev/null) or a FIFO is refused with exit 2 even with -f, before any
# shard is written, and no temporary file is left behind; a FIFO never hangs the tool.
# Peak memory of each hostile run stays under 256 MB (GNU time, where installed).
peak() {
  [ -x /usr/bin/time ] || { "$@"; return; }
  /usr/bin/time -f %M -o peak.kb "$@"; local rc=$?
  [ "$(tail -1 peak.kb)" -lt 262144 ] || echo "peak $(tail -1 peak.kb) KB, over 256 MB"
  return $rc
}
mkdir a b
ln -s /dev/null a/model-00002-of-00003.safetensors
peak timeout 5 tconvert -q "$TD/tiny.safetensors" --max-shard-size 600B -f -o a/model.safetensors; echo "link: rc=$?"
ls -A a
mkfifo b/model-00001-of-00003.safetensors
peak timeout 5 tconvert -q "$TD/tiny.safetensors" --max-shard-size 600B -f -o b/model.safetensors; echo "fifo: rc=$?"
ls -A b
