#!/usr/bin/env python3
"""The run-time dispatched kernels of a portable build against a -march=native build.

Runs tk_bench_quant of the two builds in turn on the same seeded matrices, interleaved
(native, portable, native, portable, ...), ROUNDS times, and prints per scheme the median
quantize speed (MB/s of f32 input) and dequantize speeds (GB/s of f32 output, streaming
and cache-resident) of each build and their ratio (portable / native). Speeds are per
second of process CPU time, which a time-shared machine disturbs least. The portable
build runs its default path (the best the processor has) and, for reference, TK_ISA=scalar.

  cmake -S . -B build-native -DTK_NATIVE=ON && cmake --build build-native --target tk_bench_quant
  scripts/bench/isa_vs_native.py --native build-native/bench/tk_bench_quant \
      --portable build/bench/tk_bench_quant [--rounds 5] [--rows 1024] [--cols 4096]

The medians are of interleaved rounds; "best" is the ratio of each build's fastest round
(the round least disturbed on a shared machine).

With --counts, each scheme instead runs once per build under valgrind's callgrind, and the
script prints the instructions that the scheme's quantize and dequantize executed
(inclusive, with their callees) and the ratio native / portable: a figure that, unlike
time on a shared machine, repeats exactly, and that shows where a loop vectorises in one
build and not in the other (it does not see scheduling or cache effects).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

SCHEMES = ("int8,int4,int3,q2k,q3k,q4k,q5k,q6k,q8k,nf4,fp8_e4m3,fp8_e5m2,mxfp4,mxfp6_e2m3,mxfp8_e4m3,"
           "mxint8,nvfp4,kmeans:4,vq:4:8,trellis:2")
METRICS = ("quantize_cpu_mb_s", "dequantize_cpu_gb_s", "dequantize_cache_cpu_gb_s")


def run(binary, args, isa=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TK_ISA", None)
    if isa:
        env["TK_ISA"] = isa
    out = subprocess.run([binary, *args, "--json"], env=env, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["scheme"]: r for r in rows if "scheme" in r}


def count(binary, scheme, rows, cols):
    """Instructions of the scheme's quantize and dequantize calls, under callgrind."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TK_ISA", None)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "--rows", str(rows),
                        "--cols", str(cols), "--schemes", scheme, "--dist", "gauss", "--reps", "1"],
                       env=env, check=True, capture_output=True)
        report = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out], check=True,
                                capture_output=True, text=True).stdout
    found = {}
    call = re.compile(r"\s*([\d,]+) .*Scheme::"
                      r"(quantize\(float const\*|(?:dequantize|decode)\(tk::quant::Quantized const&)")
    for line in report.splitlines():
        m = call.match(line)
        if m:
            key = "quantize" if m.group(2).startswith("quantize") else "dequantize"
            found[key] = max(found.get(key, 0), int(m.group(1).replace(",", "")))
    return found


def main_counts(a):
    print(f"{a.rows} x {a.cols} f32, 1 thread: instructions (millions) of one quantize and of the bench's "
          "dequantize calls")
    print(f"{'scheme':<14} {'quantize native portable ratio':>32} {'dequantize native portable ratio':>34}")
    worst = 10.0
    for scheme in a.schemes.split(","):
        n, p_ = count(a.native, scheme, a.rows, a.cols), count(a.portable, scheme, a.rows, a.cols)
        cells = []
        for key in ("quantize", "dequantize"):
            ratio = n[key] / p_[key]
            worst = min(worst, ratio)
            cells.append(f"{n[key] / 1e6:10.1f} {p_[key] / 1e6:10.1f} {ratio:6.3f}")
        print(f"{scheme:<14} {cells[0]:>32} {cells[1]:>34}", flush=True)
    print(f"\nlowest native/portable instruction ratio: {worst:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--native", required=True)
    p.add_argument("--portable", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--schemes", default=SCHEMES)
    p.add_argument("--json", help="also write the medians here")
    p.add_argument("--counts", action="store_true", help="count instructions under callgrind instead of timing")
    a = p.parse_args()
    if a.counts:
        main_counts(a)
        return
    args = ["--rows", str(a.rows), "--cols", str(a.cols), "--schemes", a.schemes, "--dist", "gauss", "--reps", "3"]
    runs = {"native": [], "portable": [], "scalar": []}
    for r in range(a.rounds):
        runs["native"].append(run(a.native, args))
        runs["portable"].append(run(a.portable, args))
        runs["scalar"].append(run(a.portable, args, isa="scalar"))
        print(f"round {r + 1}/{a.rounds} done", flush=True)
    med = {b: {s: {m: statistics.median(rnd[s][m] for rnd in rs) for m in METRICS} for s in rs[0]}
           for b, rs in runs.items()}
    print(f"\n{a.rows} x {a.cols} f32, 1 thread, medians of {a.rounds} interleaved rounds (per CPU second)")
    print(f"{'scheme':<14} {'quantize MB/s':>26} {'dequantize GB/s':>26} {'dequantize cached GB/s':>28}  scalar q/dq")
    print(f"{'':<14} {'native portable ratio':>26} {'native portable ratio':>26} {'native portable ratio':>28}")
    worst = 10.0
    for s in med["native"]:
        cells = []
        for m in METRICS:
            n, p_ = med["native"][s][m], med["portable"][s][m]
            worst = min(worst, p_ / n)
            cells.append(f"{n:8.2f} {p_:8.2f} {p_ / n:6.3f}")
        sc = med["scalar"][s]
        cells.append(f"{sc['quantize_cpu_mb_s'] / med['portable'][s]['quantize_cpu_mb_s']:.2f}/"
                     f"{sc['dequantize_cpu_gb_s'] / med['portable'][s]['dequantize_cpu_gb_s']:.2f}")
        print(f"{s:<14} {cells[0]:>26} {cells[1]:>26} {cells[2]:>28}  {cells[3]}")
    print(f"\nworst portable/native ratio of the medians: {worst:.3f}")
    best = {b: {s: {m: max(rnd[s][m] for rnd in rs) for m in METRICS} for s in rs[0]} for b, rs in runs.items()}
    print("ratios of each build's fastest round (quantize, dequantize, dequantize cached):")
    for s in best["native"]:
        cells = [f"{best['portable'][s][m] / best['native'][s][m]:.3f}" for m in METRICS]
        print(f"{s:<14} {' '.join(cells)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(med, f, indent=1)


if __name__ == "__main__":
    main()
