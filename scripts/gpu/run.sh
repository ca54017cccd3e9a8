#!/usr/bin/env bash
# On a GPU machine: unpack .gpu/bundle.tar.xz (scripts/gpu/bundle.sh), run the gpu tests
# and the GPU benchmarks, and leave their results in OUT_DIR (default $OUT, else
# ./gpu-out): device.txt, gpu_tests.json and .log, and one JSON per benchmark. Every
# step runs even when one before it failed; the exit status is the tests'.
#
#   scripts/gpu/run.sh [OUT_DIR] [--quick]   --quick: smaller benchmark sizes
#
# The bundle is git-ignored: a machine reached through a copy of the working tree needs
# .gpu/bundle.tar.xz carried along with it (14 MB; not .gpu/stage).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-$PWD/gpu-out}}
quick=${2:-}
mkdir -p "$out"
dir=$(mktemp -d)
tar -xJf "$root/.gpu/bundle.tar.xz" -C "$dir" || { echo "run.sh: no bundle: run scripts/gpu/bundle.sh first" >&2; exit 2; }
# CUDA's libraries: the toolkit's, else the ones PyTorch's wheels bring.
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | paste -sd:)
wheel_libs=$(python3 -c 'import glob, os, nvidia; print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(d + "/**/lib*.so*", recursive=True)})))' 2>/dev/null)
export LD_LIBRARY_PATH="$dir/lib:${cuda_libs}:${wheel_libs}:${LD_LIBRARY_PATH:-}"
export PATH="$dir/bin:$PATH"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; } >"$out/device.txt" 2>&1
ldd "$dir/bin/tk_gpu_test" | grep "not found" >>"$out/device.txt"

"$dir/bin/tk_gpu_test" --gtest_output="json:$out/gpu_tests.json" >"$out/gpu_tests.log" 2>&1
status=$?
tail -5 "$out/gpu_tests.log"

# Benchmarks: tquant (CPU and GPU interleaved, and the PyTorch users' GPU quantizers),
# tdecomp (CP-ALS, Tucker), tckpt (the stall of a save from device memory against
# torch.save), tensorkit.ckpt from PyTorch's CUDA tensors. --quick: sizes that run in
# about a minute.
qsize=8192 dsize=400 gib=2
[ "$quick" = --quick ] && { qsize=2048; dsize=200; gib=0.5; }
python3 "$root/scripts/gpu/quant_bench.py" --bench "$dir/bin/tk_bench_quant" --size "$qsize" \
  --out "$out/quant_bench.json" >"$out/quant_bench.log" 2>&1
"$dir/bin/tk_bench_decomp_gpu" --size "$dsize" --rank 40 --repeats 3 "$out/tdecomp_bench.json" \
  >"$out/tdecomp_bench.log" 2>&1
python3 "$root/scripts/gpu/ckpt_stall.py" --lib "$dir/lib/libtkckpt.so" --json "$out/ckpt_stall.json" \
  --gib "$gib" --rounds 3 >"$out/ckpt_stall.log" 2>&1
# tensorkit.ckpt on CUDA tensors: save, restore in place, incremental, bit for bit.
PYTHONPATH="$dir/python" python3 "$root/scripts/gpu/py_ckpt_cuda.py" --json "$out/py_ckpt_cuda.json" \
  >"$out/py_ckpt_cuda.log" 2>&1
tail -n 3 "$out"/*.log
rm -rf "$dir"
exit $status
