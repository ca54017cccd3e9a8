#!/usr/bin/env bash
# Run the tests that compare tensorkit with the Python reference packages against the
# newest versions of those packages instead of the pinned ones (scripts/requirements-test.txt,
# requirements-torch.txt), in a separate environment (.venv-latest), and report what
# differs by name: every package whose newest version is not its pin, then every
# reference test that fails with them.
# Exit 0 when every reference test passes, 1 otherwise. The pinned .venv is not touched.
#
# Usage: scripts/test-latest-refs.sh [BUILD_DIR]   (make test-latest-refs)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
pin_files=("$root/scripts/requirements-test.txt" "$root/scripts/requirements-torch.txt")
venv="$root/.venv-latest"
python=$(command -v python3)
[ -x /usr/bin/python3 ] && python=/usr/bin/python3

# The direct references: the pins above the "What they pull in" line.
direct=$(for f in "${pin_files[@]}"; do sed -n '/^# What they pull in/q;/^[A-Za-z]/s/==.*//p' "$f"; done)
echo "test-latest-refs: installing the newest $(echo $direct | tr ' ' ',') into .venv-latest" >&2
"$python" -m venv --clear "$venv" || exit 1
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade $direct || exit 1

echo "reference packages, pinned -> newest:"
changed=0
while IFS='=' read -r name _ pinned; do
  newest=$("$venv/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p')
  if [ "$newest" != "$pinned" ]; then
    echo "  $name $pinned -> ${newest:-(not installed)}"
    changed=1
  fi
done < <(grep -hE '^[A-Za-z0-9_.-]+==' "${pin_files[@]}")
[ $changed -eq 0 ] && echo "  (every pin is the newest version)"

# Every test that runs Python: the interop tests (fixture generation and the tests that
# read the fixtures among them), the CLI cases (they make inputs and check outputs with
# the references), the tests of label torch and the benchmark smoke tests.
TK_REFS_VENV="$venv" ctest --test-dir "$build" -L '^(interop|cli|torch|bench)$' -j"$(nproc)" --output-on-failure >"$build/test-latest-refs.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
  echo "test-latest-refs: every reference test passes with the newest packages"
  exit 0
fi
echo "test-latest-refs: reference tests that fail with the newest packages (log: $build/test-latest-refs.log):"
failed="$build/Testing/Temporary/LastTestsFailed.log"
if [ -f "$failed" ]; then sed 's/^[0-9]*:/  /' "$failed"; else tail -20 "$build/test-latest-refs.log"; fi
exit 1
