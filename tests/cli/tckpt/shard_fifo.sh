# A rank's shard replaced by a FIFO: verify reports it, restore and tconvert refuse the
# step with exit 3 naming it, each at once instead of waiting for a writer.
# Peak memory of each hostile run stays under 256 MB (GNU time, where installed).
peak() {
  [ -x /usr/bin/time ] || { "$@"; return; }
  /usr/bin/time -f %M -o peak.kb "$@"; local rc=$?
  [ "$(tail -1 peak.kb)" -lt 262144 ] || echo "peak $(tail -1 peak.kb) KB, over 256 MB"
  return $rc
}
tk_dckpt_fixture ck 4 3
rm ck/step-4/rank-00001.safetensors
mkfifo ck/step-4/rank-00001.safetensors
peak timeout 5 tckpt verify ck; echo "verify: rc=$?"
peak timeout 5 tckpt restore ck -o r.safetensors; echo "restore: rc=$?"
peak timeout 5 tconvert ck/step-4 -o c.safetensors; echo "tconvert: rc=$?"
ls r.safetensors c.safetensors 2>/dev/null || echo "no output"
