#!/usr/bin/env python3
"""tcompress against `zstd -3` on weights quantized at the source and cast to floats.

  tcompress_quantized_vs_zstd.py [--bin DIR] [--old-bin DIR] [--reps N] [--threads J]

The set (scripts/bench/make_quantized_f16.py, seeded): a ResNet-like conv net (2.5M
weights) and all-MiniLM-L6-v2 (when its model directory is in the reference environment),
their 2-D and larger tensors quantized to 255 levels (one step per tensor, or per output
channel) and stored as f16 or f32. For each file: `zstd -3` and `tcompress -j J` (and the
build in --old-bin, if given) size, compression and decompression seconds (whole commands,
file to file), interleaved per repetition, medians of --reps; once idle and once beside a
CPU-bound process (`yes`). Every round trip is checked byte for byte.
"""
import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from busy import loads  # noqa: E402
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(ROOT, ".venv", "models", "all-minilm-l6-v2", "model.safetensors")


def run(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def make_set(work):
    files = []
    for dtype in ("f16", "f32"):
        for per in ("tensor", "channel"):
            sources = [("conv", [])]
            if os.path.exists(MODEL):
                sources.append(("minilm", ["--model", MODEL]))
            for name, extra in sources:
                path = os.path.join(work, f"{name}-{dtype}-per-{per}.safetensors")
                args = [path, "--dtype", dtype] + extra + (["--per-tensor"] if per == "tensor" else [])
                subprocess.run([sys.executable, os.path.join(HERE, "make_quantized_f16.py")] + args, check=True)
                files.append(path)
    return files


def coders(a):
    out = [("zstd -3", lambda f, o: ["zstd", "-3", "-q", "-f", f, "-o", o], lambda o, b: ["zstd", "-d", "-q", "-f", o, "-o", b])]
    for label, d in (("tcompress", a.bin), ("tcompress (old)", a.old_bin)):
        if d:
            t = os.path.join(d, "tcompress")
            out.append((label, lambda f, o, t=t: [t, "-j", str(a.threads), "-q", "-f", f, "-o", o],
                        lambda o, b, t=t: [t, "-d", "-j", str(a.threads), "-q", "-f", o, "-o", b]))
    return out


def measure(a, files, work):
    rows = {}
    for f in files:
        runs = {}
        for _ in range(a.reps):
            for label, enc, dec in coders(a):
                out, back = os.path.join(work, "out"), os.path.join(work, "back")
                c = run(enc(f, out))
                d = run(dec(out, back))
                if not filecmp.cmp(f, back, shallow=False):
                    sys.exit(f"tcompress_quantized_vs_zstd.py: error: {label} did not restore {f}")
                runs.setdefault(label, []).append((os.path.getsize(out), c, d))
        rows[f] = {k: (v[0][0], statistics.median(x[1] for x in v), statistics.median(x[2] for x in v))
                   for k, v in runs.items()}
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build"))
    p.add_argument("--old-bin")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        files = make_set(work)
        print(f"tcompress -j {a.threads}; medians of {a.reps}, interleaved; {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.1f}")
        print("| load | file | MB | coder | bytes | x zstd -3 size | compress x zstd speed | decompress x zstd speed |")
        print("|---|---|---:|---|---:|---:|---:|---:|")
        for label in loads():
            rows = measure(a, files, work)
            for f, r in rows.items():
                zs, zc, zd = r["zstd -3"]
                for k, (size, c, d) in r.items():
                    print(f"| {label} | {os.path.basename(f)[:-12]} | {os.path.getsize(f) / 1e6:.1f} | {k} | {size} | "
                          f"{size / zs:.4f} | {zc / c:.2f} | {zd / d:.2f} |")


if __name__ == "__main__":
    main()
