#!/usr/bin/env python3
"""Dense decompositions across MPI ranks: tdecomp tucker and cp alone and under
`mpirun -np P`, interleaved.

A smooth 3-way field (a sum of separable Gaussians plus 1e-6 noise, seeded) is written as
safetensors and as a chunked HDF5 file; each run decomposes it with Tucker --tol
(ST-HOSVD), Tucker --ranks --method hooi, and CP-ALS of rank 6 for 10 iterations.
Reported per P: the median wall seconds of the whole command, the peak resident memory of
the largest rank (/usr/bin/time on every rank), the ranks and the error (the same on
every P up to the order of sums).

    python3 scripts/bench/tdecomp_mpi_dense.py --bin build --rounds 3 --n 384
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np

from mpi_peak import peak_mib, timed

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMP_NUM_THREADS": "1"}


def write_field(work, n):
    rng = np.random.default_rng(3)
    axes = [np.linspace(-1, 1, n) for _ in range(3)]
    x = np.zeros((n, n, n))
    for _ in range(6):
        c, w = rng.uniform(-0.6, 0.6, 3), rng.uniform(0.2, 0.5, 3)
        g = [np.exp(-((a - ci) / wi) ** 2) for a, ci, wi in zip(axes, c, w)]
        x += rng.normal() * np.einsum("i,j,k->ijk", *g)
    x += 1e-6 * np.abs(x).max() * rng.normal(size=x.shape)
    from safetensors.numpy import save_file
    import h5py
    save_file({"field": x}, os.path.join(work, "field.safetensors"))
    with h5py.File(os.path.join(work, "field.h5"), "w") as f:
        f.create_dataset("field", data=x, chunks=(16, n, n))
    return x.nbytes


def run(args, procs, method, path, extra):
    out = os.path.join(args.work, "out.safetensors")
    js = os.path.join(args.work, "r.json")
    tool = [os.path.join(args.bin, "tdecomp"), method, path, *extra, "-j", "1", "-q", "-f", "-o", out, "--json", js]
    cmd = (["mpirun", "-np", str(procs)] if procs else []) + timed(args.work, tool)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env={**os.environ, **MPI_ENV}, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    rep = json.load(open(js))["tensors"][0]
    peak = peak_mib(args.work)
    return wall, peak, rep["ranks"], rep["rel_error"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build")
    ap.add_argument("--work", default="/tmp/tk_mpi_dense")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    nbytes = write_field(args.work, args.n)
    print(f"field {args.n}^3 f64 ({nbytes / 2**20:.0f} MiB), {args.rounds} rounds interleaved, one thread a rank")
    cases = [("tucker", "field.safetensors", ["--tol", "1e-3"]), ("tucker", "field.h5", ["--tol", "1e-3"]),
             ("tucker", "field.h5", ["--ranks", "12,12,12", "--method", "hooi", "--max-iters", "3"]),
             ("cp", "field.safetensors", ["--rank", "6", "--max-iters", "10", "--tol", "1e-12"])]
    print("| method | input | options | processes | wall s | peak MiB/rank | ranks | rel_error |")
    print("|---|---|---|---|---:|---:|---|---:|")
    for method, path, extra in cases:
        procs_list = [0, 1, 2, 4]  # 0: without mpirun
        rows = {p: [] for p in procs_list}
        for _ in range(args.rounds):
            for p in procs_list:
                rows[p].append(run(args, p, method, os.path.join(args.work, path), extra))
        for p in procs_list:
            r = rows[p]
            print(f"| {method} | {path} | {' '.join(extra)} | {'alone' if p == 0 else f'mpirun -np {p}'} "
                  f"| {statistics.median(x[0] for x in r):.2f} | {statistics.median(x[1] for x in r):.0f} "
                  f"| {r[0][2]} | {r[0][3]:.6e} |")


if __name__ == "__main__":
    main()
