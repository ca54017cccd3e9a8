#!/usr/bin/env python3
"""Threads on a shared machine: each tool at -j 1 and -j 2, on an idle machine and
beside a CPU-bound process, and a three-stage pipeline against its stages run one after
another.

  threads_loaded.py --bin BUILD --model MODEL.safetensors [--rounds N] [--work DIR]
                    [--only LIST]

The "load" is one busy loop in a child process, started before a loaded run and
stopped after it. Every round runs each command in each of the four settings, and
the pipeline and its sequential form idle and loaded, interleaved (A, B, A, B), so
drift on a shared machine touches all alike. Prints medians (and ranges) as Markdown.

Data, made once in --work:
  big.safetensors  4 tensors of 4096^2 f32 (256 MiB), seeded N(0, 1)
  cp200.npy        a rank-10 200^3 f64 tensor with 1% noise
  MODEL            a real model (all-MiniLM-L6-v2 from .venv/models is what the
                   BENCHMARKS section used)
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from safetensors.numpy import save_file


def make_data(work):
    big = os.path.join(work, "big.safetensors")
    if not os.path.exists(big):
        rng = np.random.default_rng(1)
        save_file({f"w{i}": rng.standard_normal((4096, 4096), dtype=np.float32) for i in range(4)}, big)
    cp = os.path.join(work, "cp200.npy")
    if not os.path.exists(cp):
        rng = np.random.default_rng(2)
        a, b, c = (rng.standard_normal((200, 10)) for _ in range(3))
        t = np.einsum("ir,jr,kr->ijk", a, b, c)
        n = rng.standard_normal(t.shape)
        np.save(cp, t + 0.01 * np.linalg.norm(t) * n / np.linalg.norm(n))
    return big, cp


class Load:
    """One CPU-bound child process for the duration of a `with` block."""

    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.2)  # let it take its core
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def timed(cmd, cwd):
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=True, cwd=cwd, check=True, stdout=subprocess.DEVNULL, executable="/bin/bash")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder holding the tools")
    ap.add_argument("--model", required=True, help="a real model's .safetensors")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="threads-work")
    ap.add_argument("--only", default="", help="comma-separated command names to run (default: all)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    work = os.path.abspath(args.work)
    big, cp = make_data(work)
    b = os.path.abspath(args.bin)
    model = os.path.abspath(args.model)
    subprocess.run(f"{b}/tcompress -q -f {model} -o model.tkz", shell=True, cwd=work, check=True)

    commands = {
        "tconvert --dtype bf16 (256 MiB)": f"{b}/tconvert -q -f -j J {big} --dtype bf16 -o b.safetensors",
        "tquant --scheme q4k (model)": f"{b}/tquant -q -f -j J {model} --scheme q4k -o q.safetensors",
        "tcompress (model)": f"{b}/tcompress -q -f -j J {model} -o y.tkz",
        "tcompress -d (model)": f"{b}/tcompress -q -f -d -j J model.tkz -o y.safetensors",
        "tdecomp cp r10 200^3": f"{b}/tdecomp cp {cp} --rank 10 --max-iters 12 -j J -q -f -o cp.safetensors",
        "tdecomp tucker 20^3 200^3": f"{b}/tdecomp tucker {cp} --ranks 20,20,20 -j J -q -f -o tk.safetensors",
    }
    if args.only:
        keep = set(args.only.split(","))
        commands = {k: v for k, v in commands.items() if k.split()[0] in keep or k in keep}
    stages = [f"{b}/tconvert -q {model} --dtype bf16", f"{b}/tquant -q - --scheme int8", f"{b}/tcompress -q -f -"]
    pipeline = f"{stages[0]} -o - | {stages[1]} -o - | {stages[2]} -o p.tkz"
    sequential = (f"{stages[0]} -f -o s1.safetensors && {b}/tquant -q -f s1.safetensors --scheme int8 "
                  f"-o s2.safetensors && {b}/tcompress -q -f s2.safetensors -o s.tkz")

    times = {}
    for r in range(args.rounds):
        for loaded in (False, True):
            for name, cmd in commands.items():
                for j in (1, 2):
                    run = cmd.replace(" -j J ", f" -j {j} ")
                    if loaded:
                        with Load():
                            t = timed(run, work)
                    else:
                        t = timed(run, work)
                    times.setdefault((name, loaded, j), []).append(t)
            for name, cmd in (("pipeline", pipeline), ("sequential", sequential)):
                if loaded:
                    with Load():
                        t = timed(cmd, work)
                else:
                    t = timed(cmd, work)
                times.setdefault((name, loaded, 0), []).append(t)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)

    def cell(key):
        v = times[key]
        return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"

    print("| command | idle -j1 | idle -j2 | loaded -j1 | loaded -j2 | idle j2/j1 | loaded j2/j1 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in commands:
        med = {(l, j): statistics.median(times[(name, l, j)]) for l in (False, True) for j in (1, 2)}
        print(f"| {name} | {cell((name, False, 1))} | {cell((name, False, 2))} | {cell((name, True, 1))} | "
              f"{cell((name, True, 2))} | {med[(False, 2)] / med[(False, 1)]:.2f} | "
              f"{med[(True, 2)] / med[(True, 1)]:.2f} |")
    print()
    print("| three stages (default threads) | idle s | loaded s |")
    print("|---|---:|---:|")
    for name in ("pipeline", "sequential"):
        print(f"| {name} | {cell((name, False, 0))} | {cell((name, True, 0))} |")
    for loaded in (False, True):
        ratio = statistics.median(times[("pipeline", loaded, 0)]) / statistics.median(times[("sequential", loaded, 0)])
        print(f"\npipeline / sequential, {'loaded' if loaded else 'idle'}: {ratio:.2f}")


if __name__ == "__main__":
    main()
