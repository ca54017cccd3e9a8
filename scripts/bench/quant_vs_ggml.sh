#!/bin/bash
# tk/quant against llama.cpp's quantizer (ggml), side by side in one process:
#   scripts/bench/quant_vs_ggml.sh [ROUNDS]     (after make; ROUNDS default 100)
# ggml comes from the llama.cpp tree vendored in the llama-cpp-python source package
# (PyPI), built here for the CPU (native, no OpenMP) into .bench/ggml.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$root/.bench/ggml
mkdir -p "$work"
if [ ! -f "$work/build/src/libggml-base.a" ]; then
  "$root/.venv/bin/pip" download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$work"
  tar xzf "$work"/llama_cpp_python-0.3.36.tar.gz -C "$work"
  src=$work/llama_cpp_python-0.3.36/vendor/llama.cpp/ggml
  [ -f "$src/ggml.pc.in" ] || : > "$src/ggml.pc.in"   # the package leaves it out
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=OFF \
    -DBUILD_SHARED_LIBS=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF > "$work/cmake.log"
  make -C "$work/build" -j"$(nproc)" ggml-base ggml-cpu > "$work/make.log"
fi
inc=$work/llama_cpp_python-0.3.36/vendor/llama.cpp/ggml/include
g++ -O2 -march=native -std=c++20 -fopenmp -I"$root/include" -I"$root/lib" -I"$inc" "$root/scripts/bench/quant_vs_ggml.cpp" \
  -o "$work/quant_vs_ggml" "$root"/build/libtk_{quant,linalg,io,device,core}.a "$work/build/src/libggml-cpu.a" \
  "$work/build/src/libggml-base.a" -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lcrypto -lcurl -lsz -lz \
  -lopenblas -llapacke -lzstd -lxxhash -lre2 -lavcodec -lavutil -lfmt -L/usr/local/cuda/lib64 -lcudart_static \
  -lrt -lpthread -ldl
OPENBLAS_NUM_THREADS=1 "$work/quant_vs_ggml" "${1:-100}"
