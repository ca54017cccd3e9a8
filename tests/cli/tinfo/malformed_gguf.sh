# Every file of the malformed GGUF corpus (scripts/make-malformed-gguf.py): tinfo --stats
# (which reads every tensor) exits 3 with exactly one line on stderr, from a path and
# through a pipe.
fail=0
n=0
for f in "$TD"/malformed/gguf-*; do
  n=$((n + 1))
  for how in path pipe; do
    if [ $how = path ]; then tinfo --stats "$f" >/dev/null 2>err.txt; else cat "$f" | tinfo --stats - >/dev/null 2>err.txt; fi
    rc=$?
    if [ "$rc" -ne 3 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q '^tinfo: error: ' err.txt; then
      echo "$(basename "$f") ($how): exit code $rc, stderr:" >&2; head -3 err.txt >&2; fail=1
    fi
  done
done
[ "$n" -ge 32 ] || { echo "only $n corpus files found in $TD/malformed" >&2; fail=1; }
[ "$fail" -eq 0 ] && echo "checked $n files"
exit $fail
