#!/usr/bin/env python3
"""Peer side of scripts/bench/io.sh.

  io_peer.py generate FILE SIZE_MIB [--tensors N] [--seed S]
      Write a seeded float32 safetensors file of about SIZE_MIB MiB in N tensors.
  io_peer.py load FILE [--reps N] [--warmup N]
      Time safetensors.numpy.load_file (open, read, copy every tensor) and print one
      JSON line like tk_bench_io's.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
from safetensors.numpy import load_file, save_file


def generate(path, size_mib, tensors, seed):
    if size_mib < 1 or tensors < 1:
        sys.exit("io_peer.py: error: SIZE_MIB and --tensors must be positive")
    rng = np.random.default_rng(seed)
    per_tensor = size_mib * (1 << 20) // 4 // tensors
    cols = 4096
    rows = max(1, per_tensor // cols)
    data = {}
    for i in range(tensors):
        # Weight-like values: Gaussian, a different scale per tensor.
        data[f"layers.{i:02d}.weight"] = (rng.standard_normal((rows, cols), dtype=np.float32)
                                         * np.float32(0.02 * (1 + i % 4)))
    save_file(data, path, metadata={"generator": "scripts/bench/io_peer.py", "seed": str(seed)})


def load(path, reps, warmup):
    nbytes = 0
    times = []
    for i in range(warmup + reps):
        start = time.perf_counter()
        tensors = load_file(path)
        elapsed = time.perf_counter() - start
        nbytes = sum(t.nbytes for t in tensors.values())
        del tensors
        if i >= warmup:
            times.append(elapsed)
    median = statistics.median(times)
    print(json.dumps({"bench": "io", "case": "peer_load_file", "bytes": nbytes, "runs": len(times),
                      "median_s": median, "min_s": min(times), "max_s": max(times),
                      "gb_per_s": nbytes / median / 1e9}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("file")
    g.add_argument("size_mib", type=int)
    g.add_argument("--tensors", type=int, default=16)
    g.add_argument("--seed", type=int, default=0)
    ld = sub.add_parser("load")
    ld.add_argument("file")
    ld.add_argument("--reps", type=int, default=5)
    ld.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.file, args.size_mib, args.tensors, args.seed)
    else:
        load(args.file, args.reps, args.warmup)


if __name__ == "__main__":
    main()
