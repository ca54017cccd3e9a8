#!/usr/bin/env python3
"""Loading safetensors: tensorkit (tbench io) against the Python safetensors package,
same file, same run, in the tbench result form (docs/TBENCH.md).

  io_vs_safetensors.py [--size-mib N] [--tensors K] [--seed S] [--reps N] [--small]
                       [--dir DIR] [--bin DIR] [--json PATH]

Writes a seeded float32 safetensors file of N MiB (default 256; --small: 8 MiB, 2 runs)
in K tensors under DIR (default: a temporary directory), then measures, median of
--reps runs after one warm-up:
  tensorkit       `tbench io FILE --methods safetensors`: open and read every tensor
                  into owned memory (no mapping), cold (page cache dropped) and warm
  safetensors-py  safetensors.numpy.load_file(FILE), cold and warm the same way
Cold runs drop the file's pages with posix_fadvise(DONTNEED) before each run; on a
file system that ignores the advice they read from memory like the warm runs. MB/s is
tensor bytes per wall second. Prints a table; --json writes both sides' results.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tbench_form as form  # noqa: E402

SCRIPT = "io_vs_safetensors.py"


def die(msg):
    sys.exit(f"{SCRIPT}: error: {msg}")


def generate(path, size_mib, tensors, seed):
    import numpy as np
    from safetensors.numpy import save_file
    rng = np.random.default_rng(seed)
    cols = 1024
    rows = max(1, size_mib * (1 << 20) // 4 // tensors // cols)
    save_file({f"layers.{i:02d}.weight": rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02)
               for i in range(tensors)}, path)


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def run_peer(path, reps):
    import safetensors
    from safetensors.numpy import load_file
    nbytes = sum(t.nbytes for t in load_file(path).values())
    cold, _ = form.timed(lambda: load_file(path), reps, before=lambda: drop_cache(path))
    warm, _ = form.timed(lambda: load_file(path), reps)
    return form.result("io", "safetensors-py", f"safetensors {safetensors.__version__} (Python, numpy)", path,
                       {"load_mb_s": form.rate(cold, nbytes), "load_warm_mb_s": form.rate(warm, nbytes)})


def run_tk(tbench, path, reps, work):
    out = os.path.join(work, "tk.json")
    subprocess.run([tbench, "io", path, "--methods", "safetensors", "--reps", str(reps), "--json", out, "-q"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        doc = json.load(f)
    return doc["machine"], doc["results"]


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--small", action="store_true", help="8 MiB, 2 runs: the CI size")
    ap.add_argument("--dir", help="directory for the file (default: a temporary one)")
    ap.add_argument("--bin", default=os.path.join(root, "build"), help="directory holding tbench")
    ap.add_argument("--json", help="write the results in the tbench form here ('-': stdout)")
    a = ap.parse_args()
    if a.small:
        a.size_mib, a.reps, a.tensors = 8, 2, 4
    if a.size_mib < 1 or a.tensors < 1 or a.reps < 1:
        die("--size-mib, --tensors and --reps must be positive")
    tbench = os.path.join(a.bin, "tbench")
    if not os.access(tbench, os.X_OK):
        die(f"{tbench} not found (build the tbench target, or pass --bin)")

    with tempfile.TemporaryDirectory(dir=a.dir) as work:
        path = os.path.join(work, "model.safetensors")
        generate(path, a.size_mib, a.tensors, a.seed)
        machine, results = run_tk(tbench, path, a.reps, work)
        results.append(run_peer(path, a.reps))
        # Name the input by its role, not by the temporary path.
        for r in results:
            r["input"] = "model.safetensors"
        nbytes = os.path.getsize(path)

    inputs = [{"name": "model.safetensors", "source": "file", "file": "model.safetensors", "dtype": "F32",
               "bytes": nbytes, "shape": [nbytes // 4]}]
    doc = form.document(SCRIPT, sys.argv, inputs, results, a.reps, seed=a.seed)
    doc["machine"] = machine  # tbench's block, with the measured memory bandwidth
    print(f"# {machine['cpu_model']}, {machine['usable_cpus']} usable CPUs; {a.size_mib} MiB float32 in "
          f"{a.tensors} tensors; median of {a.reps} runs; MB/s of tensor bytes")
    print("| implementation | load cold MB/s | load warm MB/s |")
    print("|---|---:|---:|")
    for r in results:
        m = r["metrics"]
        print(f"| {r['implementation']} | {m['load_mb_s']['value']:.0f} | {m['load_warm_mb_s']['value']:.0f} |")
    if a.json:
        form.write(doc, a.json)


if __name__ == "__main__":
    main()
