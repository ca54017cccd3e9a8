# Every malformed HDF5 file makes tinfo (listing, and --stats, which reads the data)
# exit 3 with exactly one stderr line "tinfo: error: ...". Prints what failed.
shopt -s nullglob
files=("$TD"/malformed/*.h5)
[ ${#files[@]} -ge 6 ] || { echo "corpus missing: ${#files[@]} files"; exit 1; }
fail=0
for f in "${files[@]}"; do
  for args in "" "--stats"; do
    tinfo $args "$f" >out 2>err
    rc=$?
    lines=$(wc -l <err)
    if [ "$rc" -ne 3 ] || [ "$lines" -ne 1 ] || ! grep -q '^tinfo: error: ' err || [ -s out ]; then
      echo "FAIL: tinfo $args $(basename "$f"): exit $rc, $lines stderr lines:"; cat err; fail=1
    fi
  done
done
exit $fail
