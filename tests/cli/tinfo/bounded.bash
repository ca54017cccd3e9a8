# Sourced by the hostile-input cases: `bounded CMD [ARG...]` runs CMD with stdout to
# out.txt (or $BOUNDED_OUT) and stderr to err.txt, under a 10 s timeout, and prints "exit RC" then
# "within 256 MB and 10 s" or what went over. Under the sanitizers the memory limit is
# the tool's plus AddressSanitizer's shadow and quarantine (as tcompress/peak_rss.py).
bounded() {
  local limit_kb=$((256 * 1024)) rc kb
  if [ -n "${TK_SANITIZE:-}" ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=16"
    limit_kb=$((limit_kb * 9 / 8 + 16 * 1024))
  fi
  rm -f rss.txt
  timeout 10 /usr/bin/time -f %M -o rss.txt "$@" >"${BOUNDED_OUT:-out.txt}" 2>err.txt
  rc=$?
  echo "exit $rc"
  if [ "$rc" -eq 124 ] || [ ! -s rss.txt ]; then echo "over 10 s"; return; fi
  kb=$(tail -1 rss.txt)
  if [ "$kb" -lt "$limit_kb" ]; then echo "within 256 MB and 10 s"; else echo "over 256 MB: $((kb / 1024)) MB"; fi
}

# The one error line of err.txt, checked: "one line: TOOL: error: ..." or what it was.
one_error_line() {
  if [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "^$1: error: " err.txt; then echo "one error line"; else
    echo "stderr:"; head -c 400 err.txt; echo; fi
}

hostile() { "$PY" "$TK_SRC/tests/cli/tinfo/hostile_torch.py" "$@"; }
