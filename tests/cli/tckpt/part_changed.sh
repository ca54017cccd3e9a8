# A rank part changed after the commit, with its own checksum recomputed: rank 1's slice
# of w moved to another offset, or retyped as I32. The data still reads as the manifest
# says, but the step no longer is what its ranks wrote: verify fails and restore refuses
# it (exit 3), naming the tensor and what differs.
# Peak memory of each hostile run stays under 256 MB (GNU time, where installed).
peak() {
  [ -x /usr/bin/time ] || { "$@"; return; }
  /usr/bin/time -f %M -o peak.kb "$@"; local rc=$?
  [ "$(tail -1 peak.kb)" -lt 262144 ] || echo "peak $(tail -1 peak.kb) KB, over 256 MB"
  return $rc
}
for change in offset dtype; do
  rm -rf ck
  tk_dckpt_fixture ck 4 3 --part-$change
  peak tckpt verify ck -q; echo "$change: verify rc=$?"
  peak tckpt restore ck -q -o r.safetensors; echo "$change: restore rc=$?"
done
ls r.safetensors 2>/dev/null || echo "no output"
