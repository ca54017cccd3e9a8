#!/usr/bin/env python3
"""tckpt's command line on a file against the Python safetensors package and cp, the
same 1 GiB of f32 (64 tensors), in the same directory, interleaved.

  ckpt_cli.py --bin BUILD [--work DIR] [--rounds N]

Each round, in an order that rotates from round to round:
  tckpt save      BUILD/tckpt save W/ck --step R state.safetensors (fsync and commit)
  tckpt restore   BUILD/tckpt restore W/ck -o W/out.safetensors (every checksum checked)
  st save         safetensors.numpy.save_file of the state in memory, then fsync
  st load+save    load_file(state.safetensors) then save_file to W/out2.safetensors
  cp              cp state.safetensors W/out3.safetensors (a copy with no checks)
Outputs are removed and dirty pages written back (sync) before each, outside its time.
Prints the median seconds (and range) of each.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import time

import numpy as np
from safetensors.numpy import load_file, save_file


def clean(*paths):
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)
    os.sync()


def timed(fn, *outputs):
    clean(*outputs)
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = args.work or os.path.join(args.bin, "bench-ckpt-cli")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(1)
    per = (1 << 30) // 64 // 4
    state = {f"layer.{i:03d}.weight": rng.integers(0, 2**32, per, dtype=np.uint32).view(np.float32)
             for i in range(64)}
    src = os.path.join(work, "state.safetensors")
    save_file(state, src)
    ck, out, out2, out3, peer = (os.path.join(work, n) for n in
                                 ("ck", "out.safetensors", "out2.safetensors", "out3.safetensors", "peer.safetensors"))
    tckpt = os.path.join(args.bin, "tckpt")

    def run(*cmd):
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def st_save():
        save_file(state, peer)
        fd = os.open(peer, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    jobs = {
        "tckpt save (CLI, fsync + commit)": (lambda: run(tckpt, "save", ck, "--step", "1", src), [ck]),
        "safetensors save_file + fsync (in memory)": (st_save, [peer]),
        "tckpt restore -o (CLI, checked)": (lambda: run(tckpt, "restore", ck, "-o", out), [out]),
        "safetensors load_file + save_file": (lambda: save_file(load_file(src), out2), [out2]),
        "cp": (lambda: run("cp", src, out3), [out3]),
    }
    names = list(jobs)
    times = {n: [] for n in names}
    for r in range(args.rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            fn, outputs = jobs[n]
            if n.startswith("tckpt restore") and not os.path.isdir(ck):
                run(tckpt, "save", ck, "--step", "1", src)
            times[n].append(timed(fn, *outputs))
    clean(ck, out, out2, out3, peer)
    print(f"1 GiB of f32 in 64 tensors, {args.rounds} rounds, interleaved; seconds, median (range)\n")
    print("| operation | seconds | GB/s |")
    print("|---|---:|---:|")
    for n in names:
        m = statistics.median(times[n])
        print(f"| {n} | {m:.3f} ({min(times[n]):.3f}-{max(times[n]):.3f}) | {(1 << 30) / m / 1e9:.2f} |")


if __name__ == "__main__":
    main()
