# Sourced by the malformed-corpus cases: check_corpus MIN FILE... runs tinfo --stats
# (which reads every tensor) on each file, from its path and through a pipe; each run
# must exit 3 with exactly one "tinfo: error: ..." line on stderr. Prints one line per
# failure on stderr, then "checked N files"; sets `fail` (1 if any run failed or fewer
# than MIN files were found).
check_corpus() {
  local min=$1 n=0 f how rc
  shift
  fail=0
  for f in "$@"; do
    n=$((n + 1))
    for how in path pipe; do
      if [ $how = path ]; then tinfo --stats "$f" >/dev/null 2>err.txt; else cat "$f" | tinfo --stats - >/dev/null 2>err.txt; fi
      rc=$?
      if [ "$rc" -ne 3 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q '^tinfo: error: ' err.txt; then
        echo "$(basename "$f") ($how): exit code $rc, stderr:" >&2; head -3 err.txt >&2; fail=1
      fi
    done
  done
  [ "$n" -ge "$min" ] || { echo "only $n corpus files found" >&2; fail=1; }
  [ "$fail" -eq 0 ] && echo "checked $n files"
}
