#!/usr/bin/env bash
# The build's layer check (cmake/check_layers.cmake), as each module's target runs it:
# the real files of a module pass; a copy with an upward include planted in a source, or
# an internal header planted in a public one, fails and names the include.
# Usage: run.sh CMAKE SRC_DIR WORK_DIR MODULE ALLOWED  (ALLOWED: the modules, comma-separated)
set -euo pipefail
cmake=$1 src=$2 work=$3 module=$4 allowed=$5
check() {  # ROOT: run the check on the module's files under ROOT; its output in $work/out
  find "$1/lib/tk/$module" "$1/include/tk/$module" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) \
    >"$work/files"
  "$cmake" -DMODULE="$module" -DALLOWED="$allowed" -DFILES="$work/files" -DROOT="$1" \
    -P "$src/cmake/check_layers.cmake" >"$work/out" 2>&1
}
fail() { echo "layers test: $*" >&2; cat "$work/out" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work/copy/lib/tk" "$work/copy/include"
check "$src" || fail "the $module module's own files are refused"

# A module above this one, included from a source: refused, naming the file and include.
above=quant
[ "$module" != quant ] || above=store
cp -r "$src/lib/tk/$module" "$work/copy/lib/tk/"
cp -r "$src/include/." "$work/copy/include/"
victim=$(find "$work/copy/lib/tk/$module" -name '*.cpp' | sort | head -n 1)
echo "#include \"tk/$above/planted.h\"" >>"$victim"
if check "$work/copy"; then fail "an include of tk/$above/ from $module passed"; fi
grep -q "lib/tk/$module/$(basename "$victim"): includes tk/$above/planted.h: module $module may include only" \
  "$work/out" || fail "the refusal does not name the include"

# A public header including an internal one of its own module: refused.
cp "$src/lib/tk/$module"/*.cpp "$work/copy/lib/tk/$module/"  # undo the plant above
public=$(find "$work/copy/include/tk/$module" -name '*.h' | sort | head -n 1)
internal=$(cd "$src/lib" && find "tk/$module" -name '*.h' | sort | head -n 1)
echo "#include \"$internal\"" >>"$public"
if check "$work/copy"; then fail "a public header including $internal passed"; fi
grep -q "includes $internal, which is internal" "$work/out" || fail "the refusal does not name $internal"
echo "layers test: ok ($module)"
