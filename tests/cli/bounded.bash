# Sourced by the hostile-input cases: `bounded CMD ARGS...` runs a command under the
# bounds each of them keeps, 10 s of time (timeout) and a peak resident set under
# 256 MB (measured by GNU time, which counts the tool itself, not this shell). Returns
# the command's exit status, 124 past the time, 125 past the memory (with one line on
# stderr), so that a case which prints the status no longer matches its expected
# stdout. Under the sanitizers (TK_SANITIZE) only the time is bounded: ASan's shadow
# memory is resident.
bounded() {
  local peak rc kb
  peak=$(mktemp)
  timeout 10 /usr/bin/time -f %M -o "$peak" "$@"
  rc=$?
  kb=$(tail -n 1 "$peak")
  rm -f "$peak"
  if [ "$rc" -eq 124 ]; then
    echo "bounds: $1 ran past 10 s" >&2
  elif [ -z "${TK_SANITIZE:-}" ] && [ "${kb:-0}" -ge 262144 ]; then
    echo "bounds: $1 peaked at $kb KB, over 256 MB" >&2
    rc=125
  fi
  return $rc
}
