# A rank part changed after the commit, with its own checksum recomputed: rank 1's slice
# of w moved to another offset, or retyped as I32. The data still reads as the manifest
# says, but the step no longer is what its ranks wrote: verify fails and restore refuses
# it (exit 3), naming the tensor and what differs.
for change in offset dtype; do
  rm -rf ck
  tk_dckpt_fixture ck 4 3 --part-$change
  tckpt verify ck -q; echo "$change: verify rc=$?"
  tckpt restore ck -q -o r.safetensors; echo "$change: restore rc=$?"
done
ls r.safetensors 2>/dev/null || echo "no output"
