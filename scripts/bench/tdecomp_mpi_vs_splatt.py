#!/usr/bin/env python3
"""Sparse CP across MPI ranks: tdecomp against SPLATT's own MPI build, side by side.

Both run `mpirun -np P` on the same .tns (uniformly random nonzeros, seeded), the same
rank, a fixed number of iterations and one thread a rank, interleaved (tdecomp, SPLATT,
tdecomp, ...) for every P; medians of the rounds. Reported per P: seconds per ALS
iteration as each tool reports it, the wall time of the whole run (reading included),
the peak resident memory of the largest rank (/usr/bin/time on every rank), tdecomp's
measured bytes sent a rank per iteration against the model below, and SPLATT's own
communication volume (rows).

The model (medium-grained grid p_1 x ... x p_d, nonzeros uniformly spread): a rank's
layer of mode n holds L_n = I_n / p_n rows, of which its nnz/P nonzeros touch a fraction
q_n = 1 - exp(-(nnz/P) / L_n). It sends every touched row it does not own to the owner
(partial MTTKRP rows) and every owned row to the other ranks touching it (new rows);
on average both are L_n q_n (1 - p_n/P) rows, so

    bytes per iteration per rank = 16 R sum_n (I_n/p_n) q_n (1 - p_n/P).

The script prints the model's projection to P = 64 and 1024 ranks for a FROSTT-sized
tensor (Amazon reviews: 4.8M x 1.8M x 1.8M, 1.7e9 nonzeros) with the grid tdecomp chooses.

SPLATT is built outside this project (its source is public) and passed with --splatt:
    ./configure --with-mpi && make   (in a scratch folder)
    python3 scripts/bench/tdecomp_mpi_vs_splatt.py --splatt PATH/bin/splatt --bin build
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import time

import numpy as np

from mpi_peak import peak_mib, timed

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMP_NUM_THREADS": "1"}


def write_tns(path, dims, nnz, seed):
    rng = np.random.default_rng(seed)
    idx = np.unique(np.stack([rng.integers(0, d, size=int(nnz * 1.05)) for d in dims], axis=1), axis=0)
    idx = idx[rng.permutation(len(idx))[:nnz]]
    vals = rng.uniform(0, 1, size=len(idx))
    with open(path, "w") as f:
        for row, v in zip(idx + 1, vals):
            f.write(" ".join(map(str, row)) + f" {v:.6f}\n")
    return len(idx)


def grid_for(dims, procs):
    """The grid tdecomp chooses (lib/tk/decomp/cp_sparse_dist.cpp, choose_grid)."""
    primes, rest, f = [], procs, 2
    while f * f <= rest:
        while rest % f == 0:
            primes.append(f)
            rest //= f
        f += 1
    if rest > 1:
        primes.append(rest)
    grid = [1] * len(dims)
    for p in sorted(primes, reverse=True):
        best = max(range(len(dims)), key=lambda n: (dims[n] / grid[n], -n))
        grid[best] *= p
    return grid


def model_bytes(dims, nnz, procs, rank, grid=None):
    grid = grid or grid_for(dims, procs)
    total = 0.0
    for dim, p in zip(dims, grid):
        layer = dim / p
        q = 1 - math.exp(-(nnz / procs) / layer)
        total += layer * q * (1 - p / procs)
    return 16 * rank * total, grid


def run_tdecomp(args, tns, procs, out_json):
    cmd = ["mpirun", "-np", str(procs)] + timed(args.work, [
           os.path.join(args.bin, "tdecomp"), "cp", tns, "--rank", str(args.rank), "--max-iters", str(args.iters),
           "--tol", "1e-15", "--init", "random", "--seed", "1", "-j", "1", "-q", "-f", "-o",
           os.path.join(args.work, "cp.safetensors"), "--json", out_json])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env={**os.environ, **MPI_ENV}, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    rep = json.load(open(out_json))["tensors"][0]
    return {"iter": rep["seconds_per_iteration"], "wall": wall, "iters": rep["iterations"],
            "peak_mib": peak_mib(args.work), "bytes": rep["mpi"]["bytes_sent_per_iteration_max"],
            "bytes_mean": rep["mpi"]["bytes_sent_per_iteration_mean"], "grid": rep["mpi"]["grid"],
            "fit": rep["fit"]}


def run_splatt(args, tns, procs):
    cmd = ["mpirun", "-np", str(procs)] + timed(args.work, [
           args.splatt, "cpd", tns, "-r", str(args.rank), "-i", str(args.iters), "--tol=0", "--seed=1", "-t", "1",
           "--nowrite"])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env={**os.environ, **MPI_ENV}, capture_output=True, text=True, check=True,
                       cwd=args.work)
    wall = time.perf_counter() - t0
    cpd = float(re.search(r"^\s*CPD\s+([\d.]+)s", p.stdout, re.M).group(1))
    iters = len(re.findall(r"^\s*its =", p.stdout, re.M))
    vol = re.search(r"AVG COMMUNICATION VOL=(\d+)", p.stdout)
    vol_max = re.search(r"MAX COMMUNICATION VOL=(\d+)", p.stdout)
    dims = re.search(r"DISTRIBUTION=\S+ DIMS=(\S+)", p.stdout)
    fit = re.search(r"Final fit: ([\d.]+)", p.stdout)
    return {"iter": cpd / max(iters, 1), "wall": wall, "iters": iters, "peak_mib": peak_mib(args.work),
            "vol_avg": int(vol.group(1)) if vol else 0, "vol_max": int(vol_max.group(1)) if vol_max else 0,
            "grid": dims.group(1) if dims else "?", "fit": float(fit.group(1)) if fit else float("nan")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--splatt", required=True)
    ap.add_argument("--bin", default="build")
    ap.add_argument("--work", default="/tmp/tk_mpi_splatt")
    ap.add_argument("--dims", default="2000,1500,1000")
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--procs", default="1,2,4")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    dims = [int(v) for v in args.dims.split(",")]
    tns = os.path.join(args.work, "bench.tns")
    nnz = write_tns(tns, dims, args.nnz, 42)
    print(f"tensor {'x'.join(map(str, dims))}, {nnz} nonzeros, rank {args.rank}, {args.iters} iterations, "
          f"{args.rounds} rounds interleaved, one thread a rank")
    print("| P | tdecomp s/iter | SPLATT s/iter | ratio | tdecomp wall s | SPLATT wall s | tdecomp peak MiB/rank "
          "| SPLATT peak MiB/rank | tdecomp grid | SPLATT grid | bytes sent/rank/iter (max, mean) | model | "
          "SPLATT comm vol (avg, max rows) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---|")
    for procs in [int(v) for v in args.procs.split(",")]:
        a, b = [], []
        for r in range(args.rounds):
            a.append(run_tdecomp(args, tns, procs, os.path.join(args.work, f"t{procs}.json")))
            b.append(run_splatt(args, tns, procs))
        med = lambda rows, k: statistics.median(x[k] for x in rows)
        model, _ = model_bytes(dims, nnz, procs, args.rank, a[0]["grid"])
        print(f"| {procs} | {med(a, 'iter'):.4f} | {med(b, 'iter'):.4f} | {med(b, 'iter') / med(a, 'iter'):.2f} "
              f"| {med(a, 'wall'):.2f} | {med(b, 'wall'):.2f} | {med(a, 'peak_mib'):.0f} | {med(b, 'peak_mib'):.0f} "
              f"| {'x'.join(map(str, a[0]['grid']))} | {b[0]['grid']} | {a[0]['bytes']}, {a[0]['bytes_mean']:.0f} "
              f"| {model:.0f} | {b[0]['vol_avg']}, {b[0]['vol_max']} |")
        print(f"  fits: tdecomp {a[0]['fit']:.5f}, SPLATT {b[0]['fit']:.5f}; iterations {a[0]['iters']}, {b[0]['iters']}")
    print("\nModel projection, Amazon-reviews-sized tensor 4.8M x 1.8M x 1.8M, 1.7e9 nonzeros, rank 16:")
    big = [4_800_000, 1_800_000, 1_800_000]
    for procs in (64, 1024):
        b, grid = model_bytes(big, 1.7e9, procs, 16)
        nz_mib = 1.7e9 / procs * 32 / 2**20
        print(f"  P={procs}: grid {'x'.join(map(str, grid))}, {b / 2**20:.1f} MiB sent a rank per iteration "
              f"({b / 12.5e9 * 1e3:.1f} ms at 12.5 GB/s), nonzeros {nz_mib:.0f} MiB a rank")


if __name__ == "__main__":
    main()
