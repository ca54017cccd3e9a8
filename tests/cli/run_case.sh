#!/usr/bin/env bash
# Run one CLI golden case: CASE.sh is executed with the tools on PATH and the test data
# directory as $TD, in a fresh scratch directory; its stdout is compared byte for byte
# with CASE.out, its stderr matched against the extended regex in CASE.err and its exit
# code against CASE.rc (0 when absent). A passing case's scratch directory is removed (some
# hold hundreds of MB: the bombs, the memory cases), a failing one's is kept to look at.
set -u
case_sh=$1
base=${case_sh%.sh}
name=$(basename "$base")
tool=$(basename "$(dirname "$case_sh")")
work="${TK_TMP:-/tmp}/cli/$tool/$name"
rm -rf "$work" && mkdir -p "$work"
export PATH="$TK_BIN:$PATH" TD="$TK_TESTDATA" PY="$TK_PYTHON"
(cd "$work" && bash -o pipefail "$case_sh" >"$work/stdout" 2>"$work/stderr" </dev/null)
rc=$?
want_rc=0
[ -f "$base.rc" ] && want_rc=$(tr -d '[:space:]' <"$base.rc")
fail=0
if [ "$rc" != "$want_rc" ]; then
  echo "exit code $rc, expected $want_rc"; fail=1
fi
if [ -f "$base.out" ] && ! cmp -s "$base.out" "$work/stdout"; then
  echo "stdout differs from $base.out:"; diff -u "$base.out" "$work/stdout" | head -40; fail=1
fi
if [ -f "$base.err" ]; then
  pattern=$(cat "$base.err")
  if ! grep -Eq -- "$pattern" "$work/stderr"; then
    echo "stderr does not match /$pattern/:"; head -20 "$work/stderr"; fail=1
  fi
fi
if [ $fail -ne 0 ]; then
  echo "--- stderr ---"; head -20 "$work/stderr"
else
  chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"
fi
exit $fail
