#!/usr/bin/env bash
# tdecomp on the GPU against the CPU (run on a machine with a CUDA device):
#
#   scripts/gpu/tdecomp_bench.sh OUT.json [SIZE] [RANK]     (defaults 400 and 40)
#
# Builds bench/tk_bench_decomp_gpu in TK_BUILD (default ./build, configured with the CUDA
# backend) and runs it on a seeded SIZE^3 tensor in f32 and f64: Tucker ST-HOSVD's time,
# HOOI's time per sweep and CP-ALS's time per iteration on each side, CPU and GPU
# interleaved, medians of REPEATS rounds (default 3).
# Writes the JSON to OUT.json and prints it; exits non-zero when a step fails.
set -euo pipefail

out=${1:?usage: tdecomp_bench.sh OUT.json [SIZE] [RANK]}
size=${2:-400}
rank=${3:-40}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TK_BUILD:-$root/build}
cmake --build "$build" -j"$(nproc)" --target tk_bench_decomp_gpu >/dev/null
"$build/bench/tk_bench_decomp_gpu" --size "$size" --rank "$rank" --repeats "${REPEATS:-3}" "$out"
