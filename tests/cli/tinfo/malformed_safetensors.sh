# Every file of the malformed safetensors corpus: tinfo exits 3 with exactly one line
# on stderr, "tinfo: error: ...". Prints one line per failure and exits 1 if any.
fail=0
n=0
for f in "$TD"/malformed/*.safetensors; do
  n=$((n + 1))
  tinfo "$f" >/dev/null 2>err.txt
  rc=$?
  lines=$(wc -l <err.txt)
  if [ "$rc" -ne 3 ]; then
    echo "$(basename "$f"): exit code $rc, expected 3" >&2; fail=1
  fi
  if [ "$lines" -ne 1 ] || ! grep -q '^tinfo: error: ' err.txt; then
    echo "$(basename "$f"): stderr is not one 'tinfo: error: ...' line:" >&2; head -3 err.txt >&2; fail=1
  fi
  # The same through a pipe, reading the data (--stats) so that truncated or trailing
  # data is seen too.
  cat "$f" | tinfo --stats - >/dev/null 2>err.txt
  rc=$?
  if [ "$rc" -ne 3 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q '^tinfo: error: ' err.txt; then
    echo "$(basename "$f") via a pipe: exit code $rc, stderr:" >&2; head -3 err.txt >&2; fail=1
  fi
done
if [ "$n" -lt 50 ]; then
  echo "only $n corpus files found in $TD/malformed" >&2; fail=1
fi
[ "$fail" -eq 0 ] && echo "checked $n files"
exit $fail
