#!/usr/bin/env bash
# Install what tensorkit needs to build and test on Debian 12: system packages via
# apt-get (only those missing) and a Python virtual environment (.venv) with the
# reference packages the tests compare against. Safe to re-run: does nothing when
# everything is present.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

apt_packages=(
  build-essential gfortran cmake pkg-config git
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libhdf5-dev hdf5-tools libzstd-dev zstd
  libgtest-dev libgmock-dev
  libopenblas-dev liblapacke-dev
  libavcodec-dev libavutil-dev
  libssl-dev libxxhash-dev zlib1g-dev
  clang libclang-rt-14-dev time
  python3 python3-venv python3-pip
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

# Python reference packages for interop tests and benchmarks (never used by the tools).
py_packages=(numpy safetensors h5py hdf5plugin ml_dtypes pytest tensorly)
# Peers of the benchmark scripts only, installed with --bench (`make bench-deps`):
# zipnn (scripts/bench/codec_vs_zipnn.py, compress_vs_peers.py) pulls in torch, several
# GB that the build and the tests do not need.
if [ "${1:-}" = "--bench" ]; then
  py_packages+=(zipnn)
fi
venv="$here/.venv"
stamp="$venv/.tk-deps-${#py_packages[@]}-$(echo "${py_packages[*]}" | cksum | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  echo "install-deps: creating Python environment in .venv" >&2
  python=$(command -v python3)
  [ -x /usr/bin/python3 ] && python=/usr/bin/python3
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q "${py_packages[@]}"
  touch "$stamp"
fi
