#!/bin/bash
# tk/quant against llama.cpp's quantizer (ggml), side by side in one process:
#   scripts/bench/quant_vs_ggml.sh [ROUNDS]     (after make; ROUNDS default 100)
# ggml comes from the llama.cpp tree vendored in the llama-cpp-python source package
# (PyPI), built here for the CPU (native, no OpenMP) into .bench/ggml; the program
# itself is the build's target tk_bench_quant_vs_ggml (cmake -DTK_GGML_DIR=.bench/ggml).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$root/.bench/ggml
mkdir -p "$work"
if [ ! -f "$work/build/src/libggml-base.a" ]; then
  [ -f "$work"/llama_cpp_python-0.3.36.tar.gz ] ||
    "$root/.venv/bin/pip" download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$work"
  tar xzf "$work"/llama_cpp_python-0.3.36.tar.gz -C "$work"
  src=$work/llama_cpp_python-0.3.36/vendor/llama.cpp/ggml
  [ -f "$src/ggml.pc.in" ] || : > "$src/ggml.pc.in"   # the package leaves it out
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=OFF \
    -DBUILD_SHARED_LIBS=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF > "$work/cmake.log"
  make -C "$work/build" -j"$(nproc)" ggml-base ggml-cpu > "$work/make.log" 2>&1
fi
# The peer program is a target of the project's own build, linked as every tool is.
ggml=$work/llama_cpp_python-0.3.36/vendor/llama.cpp/ggml
ln -sfn "$ggml/include" "$work/include"
cmake -S "$root" -B "$root/build" -DTK_GGML_DIR="$work" > /dev/null
cmake --build "$root/build" --target tk_bench_quant_vs_ggml -j"$(nproc)" > /dev/null
OPENBLAS_NUM_THREADS=1 "$root/build/bench/tk_bench_quant_vs_ggml" "${1:-100}"
