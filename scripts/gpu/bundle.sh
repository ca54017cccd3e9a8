#!/usr/bin/env bash
# Build the GPU checks for a Hopper machine (sm_90; the H100 and H200) and pack them, with
# the shared libraries they need beyond the C/C++ runtimes and CUDA's own, into
# .gpu/bundle.tar.xz (git-ignored). A GPU machine has the CUDA driver and toolkit but
# not this project's build dependencies (HDF5, OpenBLAS, libav, ...), so the checks are
# built here and carried there; scripts/gpu/run.sh unpacks and runs them.
#
#   scripts/gpu/bundle.sh            then, on the GPU machine: scripts/gpu/run.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-gpu
stage=$root/.gpu/stage
# The tools and tk_gpu_video_test stay behind: libavcodec and its dependencies are
# larger than a GPU machine's call carries (run them where FFmpeg 5's libraries are).
targets=(tk_gpu_test tk_bench_quant tk_bench_decomp_gpu tkckpt)
# Portable host code (no -march=native: the GPU machine's processor is another), device
# code for sm_90 plus PTX, which newer GPUs compile when they load it; only the shared
# libraries a program calls are recorded as its needs (--as-needed), so that none is
# carried for nothing.
configured=$(cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTK_NATIVE=OFF -DTK_MPI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--as-needed)
grep -q 'cuda=ON' <<<"$configured" || {
  echo "bundle.sh: this build has no CUDA backend (is nvcc on PATH?)" >&2
  exit 5
}
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
files=()
for t in "${targets[@]}"; do
  f=$(find "$build" -maxdepth 3 \( -name "$t" -o -name "lib$t.so" \) | head -1)
  [ -n "$f" ] || { echo "bundle.sh: $t was not built" >&2; exit 1; }
  case $f in *.so) cp -L "$f" "$stage/lib/" ;; *) cp "$f" "$stage/bin/" ;; esac
  files+=("$f")
done
# The Python package with its CUDA build of the engine (for scripts/gpu/py_ckpt_cuda.py),
# when this machine builds it (pybind11 and the Python headers): built for the Python of
# .venv, so it imports where the GPU machine's python3 is the same minor version.
if cmake --build "$build" -j"$(nproc)" --target tensorkit_python 2>/dev/null; then
  mkdir -p "$stage/python" && cp -r "$build/python/tensorkit" "$stage/python/"
  files+=("$stage"/python/tensorkit/_ckpt*.so)
fi
# Every resolved dependency but glibc, the C++ runtime and CUDA's libraries (the GPU
# machine's own match its driver).
ldd "${files[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so|/ld-linux|/cuda[^/]*/|/libcuda\.|/libnvidia' |
  xargs -r cp -L -t "$stage/lib/"
strip "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
tar -C "$stage" -cJf "$root/.gpu/bundle.tar.xz" .
du -h "$root/.gpu/bundle.tar.xz"
