#!/usr/bin/env bash
# `pip install` of the wheel by a user without root, on a machine without tensorkit's
# libraries. As root: create the user tk-wheel-test, then in a new mount namespace lay a
# copy of only the C and C++ run-times and what Python itself loads over the system's
# library folder, and an empty folder over /usr/include (no -dev package). There, as that
# user, user.sh makes a venv, installs the wheel offline and runs the tools; then, outside
# the namespace, it checks that the system's libavcodec is found when it is installed.
# Usage: run.sh SOURCE_DIR WHEEL_BUILD_DIR   (exit 77: skipped, with the reason)
set -euo pipefail
src=$1 wheel_build=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
user=tk-wheel-test

skip() {
  echo "wheel test: skipped: $*"
  exit 77
}
shopt -s nullglob
wheels=("$wheel_build"/dist/tensorkit-*.whl)
deps=("$wheel_build"/deps/*.whl)
[ ${#wheels[@]} -gt 0 ] || skip "no wheel in $wheel_build/dist (make wheel builds it)"
[ ${#wheels[@]} -eq 1 ] || { echo "wheel test: several wheels in $wheel_build/dist: ${wheels[*]}" >&2; exit 1; }
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3"
[ "$(id -u)" -eq 0 ] || skip "needs root, to add the user and the mount namespace it runs in"
for tool in unshare setpriv useradd mount ldd; do
  command -v "$tool" >/dev/null || skip "needs $tool"
done
wheel=${wheels[0]}
newer=$(find "$src/lib" "$src/src" "$src/apps" "$src/python" -newer "$wheel" -type f -print -quit)
[ -z "$newer" ] || echo "wheel test: note: $newer is newer than $(basename "$wheel"); make wheel rebuilds it"

id -u "$user" >/dev/null 2>&1 ||
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"

work=$(mktemp -d /tmp/tk-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir "$work/pkgs" "$work/home" "$work/run" "$work/venv" "$work/lib"
cp "$wheel" "${deps[@]}" "$work/pkgs/"
cp "$here/user.sh" "$work/"
# The README's quick start, as written.
awk '/tests\/wheel\/run.sh runs this block/ { found = 1; next }
     found && /^```sh/ { inside = 1; next }
     inside && /^```/ { exit }
     inside' "$src/README.md" >"$work/quickstart.sh"
[ -s "$work/quickstart.sh" ] || { echo "wheel test: no quick start block in README.md" >&2; exit 1; }
chown -R "$user:$user" "$work/pkgs" "$work/home" "$work/run" "$work/venv"

# What stays in the library folder: the run-times that manylinux wheels may assume, and
# what this test's own programs load (bash, coreutils, Python and its extension modules;
# among the latter libcrypto and libz, which the tools must nevertheless take from the
# wheel: user.sh checks where every library of theirs resolves).
libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
# Debian's Python, the one user.sh runs (a PATH of /usr/bin:/bin), not a root-only one.
python=$(readlink -f /usr/bin/python3)
dynload=$("$python" -c 'import sysconfig; print(sysconfig.get_path("platstdlib"))')/lib-dynload
keep="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libresolv.so.2
      libstdc++.so.6 libgcc_s.so.1 ld-linux-x86-64.so.2"
programs=("$python" "$dynload"/*.so)
for p in bash env setpriv cat cp mkdir rm ls grep sed awk head tail wc cmp sort id readlink find dirname basename; do
  programs+=("$(readlink -f "$(command -v "$p")")")
done
keep+=" $(ldd "${programs[@]}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { n = split($3, a, "/"); print a[n] }' | sort -u | tr '\n' ' ')"
for name in $keep; do
  if [ -e "$libdir/$name" ]; then cp -L "$libdir/$name" "$work/lib/$name"; fi
done

echo "== in a mount namespace: $libdir holds $(ls "$work/lib" | wc -l) libraries, /usr/include is empty"
unshare --mount --propagation private -- bash -c '
  set -e
  mount -t tmpfs -o size=1m tmpfs /usr/include
  mount --bind "$1" "$2"   # last: mount itself needs libraries that this hides
  exec setpriv --reuid="$3" --regid="$3" --clear-groups -- env -i HOME="$4/home" PATH=/usr/bin:/bin \
    LANG=C.UTF-8 PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 bash "$4/user.sh" "$4" sandbox
' sandbox "$work/lib" "$libdir" "$user" "$work"

echo "== outside it, with the system's libraries"
setpriv --reuid="$user" --regid="$user" --clear-groups -- env -i HOME="$work/home" PATH=/usr/bin:/bin \
  LANG=C.UTF-8 PIP_CONFIG_FILE=/dev/null bash "$work/user.sh" "$work" system
echo "wheel test: $(basename "$wheel") installs and runs as a user without root"
