#!/usr/bin/env python3
"""tquant's GPU path against its CPU path and the GPU quantizers of PyTorch users.

Runs tk_bench_quant (scripts/bench/quant_bench.cpp) on an N x N f32 matrix, interleaved
CPU, GPU, CPU, GPU, ... for ROUNDS rounds, and takes the medians: quantize MB/s of f32
input and dequantize GB/s of f32 output, host memory to host memory (the copies to the
device and back are timed, as tquant runs them). The CPU runs on every core.

Peers, where they import: bitsandbytes' quantize_4bit / dequantize_4bit (nf4, blocks of
64) and torchao's affine int4 (groups of 32), each timed from device memory (their
usual case) and from host memory to host memory (with the copies, like ours).

    quant_bench.py --bench PATH/tk_bench_quant [--size N] [--rounds R] --out FILE.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = [  # (scheme, extra flags)
    ("int4", []),
    ("int8", []),
    ("int4", ["--fast"]),
    ("q4k", []),
    ("nf4", []),  # bitsandbytes' quantize_4bit is the peer
    ("fp8_e4m3", []),  # torchao's float8 is the peer, where it installs
    ("mxfp4", ["--scale-rule", "search"]),
    ("nvfp4", []),
]


def run_bench(bench, scheme, flags, size, device, threads):
    cmd = [bench, "--rows", str(size), "--cols", str(size), "--schemes", scheme, "--dist", "gauss", "--reps", "3",
           "--threads", str(threads), "--json", "--device", str(device)] + flags
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        return {"device": "cuda:0" if device >= 0 else "cpu", "error": run.stderr.strip()}
    return json.loads(run.stdout.strip().splitlines()[-1])


def peer_timings(size, rounds):
    """bitsandbytes and torchao on the same shape, where they import."""
    try:
        import torch
    except ImportError:
        return {"torch": "not installed"}
    if not torch.cuda.is_available():
        return {"torch": "no CUDA device"}
    x_host = torch.randn(size, size) * 0.02
    x_dev = x_host.cuda()
    mb = x_host.numel() * 4 / 1e6

    def timed(fn):
        times = []
        for _ in range(rounds):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    peers = {}
    try:
        import bitsandbytes.functional as bnbf
        q, state = bnbf.quantize_4bit(x_dev, blocksize=64, quant_type="nf4")
        bnbf.dequantize_4bit(q, state)
        peers["bitsandbytes_nf4"] = {
            "quantize_mb_s_device": mb / timed(lambda: bnbf.quantize_4bit(x_dev, blocksize=64, quant_type="nf4")),
            "quantize_mb_s_host": mb / timed(lambda: bnbf.quantize_4bit(x_host.cuda(), blocksize=64, quant_type="nf4")),
            "dequantize_gb_s_device": mb / 1e3 / timed(lambda: bnbf.dequantize_4bit(q, state)),
            "dequantize_gb_s_host": mb / 1e3 / timed(lambda: bnbf.dequantize_4bit(q, state).cpu()),
        }
    except Exception as e:  # not installed, or no build for this GPU
        peers["bitsandbytes_nf4"] = f"unavailable: {e.__class__.__name__}: {e}"
    try:
        from torchao.quantization.quant_primitives import (MappingType, choose_qparams_affine, dequantize_affine,
                                                           quantize_affine)
        block = (1, 32)

        def quantize(x):
            scale, zero = choose_qparams_affine(x, MappingType.SYMMETRIC, block, torch.int8, -8, 7)
            return quantize_affine(x, block, scale, zero, torch.int8, -8, 7), scale, zero

        codes, scale, zero = quantize(x_dev)
        peers["torchao_int4_affine"] = {
            "quantize_mb_s_device": mb / timed(lambda: quantize(x_dev)),
            "quantize_mb_s_host": mb / timed(lambda: [t.cpu() for t in quantize(x_host.cuda())]),
            "dequantize_gb_s_device": mb / 1e3 / timed(
                lambda: dequantize_affine(codes, block, scale, zero, torch.int8, -8, 7)),
            "dequantize_gb_s_host": mb / 1e3 / timed(
                lambda: dequantize_affine(codes, block, scale, zero, torch.int8, -8, 7).cpu()),
        }
    except Exception as e:
        peers["torchao_int4_affine"] = f"unavailable: {e.__class__.__name__}: {e}"
    return peers


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    threads = os.cpu_count() or 1
    results, errors = [], {}
    for scheme, flags in CASES:
        runs = {"cpu": [], "cuda:0": []}
        for _ in range(a.rounds):
            for device in (-1, 0):
                r = run_bench(a.bench, scheme, flags, a.size, device, threads)
                if "error" in r:
                    errors.setdefault(r["device"], r["error"])
                else:
                    runs[r["device"]].append(r)
        row = {"scheme": scheme, "flags": flags, "size": a.size, "threads": threads}
        for device, rs in runs.items():
            if rs:
                row[device] = {k: statistics.median(r[k] for r in rs) for k in ("quantize_mb_s", "dequantize_gb_s")}
        if runs["cpu"] and runs["cuda:0"]:
            row["gpu_over_cpu"] = {k: row["cuda:0"][k] / row["cpu"][k] for k in ("quantize_mb_s", "dequantize_gb_s")}
        results.append(row)
        print(json.dumps(row), flush=True)
    doc = {"tensorkit": results, "errors": errors, "peers": peer_timings(a.size, a.rounds)}
    print(json.dumps(doc["peers"], indent=1))
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
