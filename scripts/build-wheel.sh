#!/usr/bin/env bash
# Build the wheel (`make wheel`): scikit-build-core builds the CMake project (pyproject.toml)
# into build-wheel/, auditwheel repairs the result so that it carries the shared libraries the
# tools and the extension module link, and the repaired wheel lands in build-wheel/dist/.
# The build tools are the pinned set of scripts/requirements-wheel.txt, in their own venv
# (build-wheel/env), and the build runs there without build isolation: nothing is fetched
# but those pins. build-wheel/deps/ gets the numpy wheel that tests/wheel installs offline.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$here/build-wheel"
env="$out/env"
pins="$here/scripts/requirements-wheel.txt"
python=$(command -v python3)
[ -x /usr/bin/python3 ] && python=/usr/bin/python3

stamp="$env/.tk-wheel-$(cksum <"$pins" | cut -d' ' -f1)"
if ! [ -f "$stamp" ]; then
  echo "build-wheel: installing the pinned build tools into build-wheel/env" >&2
  "$python" -m venv --clear "$env"
  "$env/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$pins"
  "$env/bin/python" -m pip check --disable-pip-version-check >&2
  touch "$stamp"
fi

# The numpy the tests pin, for the offline install of the wheel's test.
numpy_pin=$(grep -E '^numpy==' "$here/scripts/requirements-test.txt")
if ! ls "$out/deps/numpy-${numpy_pin#numpy==}-"*.whl >/dev/null 2>&1; then
  "$env/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
    -d "$out/deps" "$numpy_pin"
fi

rm -rf "$out/raw" "$out/dist"
"$env/bin/python" -m pip wheel --disable-pip-version-check --no-build-isolation --no-deps \
  -w "$out/raw" "$here"
# auditwheel names the platform: the oldest manylinux policy whose symbol versions the
# binaries satisfy (that of the build machine's glibc).
PATH="$env/bin:$PATH" "$env/bin/auditwheel" repair -w "$out/dist" "$out/raw"/tensorkit-*.whl
wheel=$(ls "$out/dist"/tensorkit-*.whl)
echo "build-wheel: $wheel ($(du -h "$wheel" | cut -f1))" >&2
