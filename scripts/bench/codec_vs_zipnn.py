#!/usr/bin/env python3
"""Lossless codec benchmark: tensorkit's byte-grouped codec against ZipNN, same data, same run.

  codec_vs_zipnn.py [--values N] [--seed S] [--data FILE] [--reps N] [--threads LIST]
                    [--bench PATH] [--small] [--json PATH] [--tbench-json PATH]

Writes N bf16 values drawn from N(0, 0.02) with seed S (default 50M, 42) to a temporary
safetensors file, or uses the bf16 tensors of FILE, then measures on those bytes:
  tk    bench/tk_bench_codec FILE (default 1 MiB chunks, zstd level 3)
  ZipNN zipnn.ZipNN(input_format="byte", bytearray_dtype="bfloat16", threads=T)
for each thread count T of LIST (default 1,2): ratio, and compression and decompression
speed in MB/s of decoded bytes, median of --reps runs after one warm-up, by the wall
clock and per CPU-second of the process (the steadier figure on a shared machine).
Every ZipNN round trip is checked bit for bit (tk_bench_codec checks its own). Prints
the machine line of tk_bench_codec and a Markdown table; --json writes every
measurement as JSON lines, --tbench-json the tbench result form (docs/TBENCH.md).
Without the zipnn package the ZipNN rows are reported as skipped. --small is the CI
size: 1M values, 2 runs, one thread.
"""
import argparse
import importlib.util
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import warnings


def die(msg):
    sys.exit(f"codec_vs_zipnn.py: error: {msg}")


def bf16_normal(values, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    u = rng.normal(0.0, 0.02, values).astype(np.float32).view(np.uint32)
    # Round to nearest even, as every bf16 cast does (no NaNs in this data).
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_safetensors(path, bits):
    header = json.dumps({"w": {"dtype": "BF16", "shape": [int(bits.size)],
                               "data_offsets": [0, int(bits.nbytes)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.write(bits.tobytes())


def read_bf16(path):
    """Concatenated bytes of the BF16 tensors of a safetensors file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        chunks = []
        for name, info in header.items():
            if name == "__metadata__" or info["dtype"] != "BF16":
                continue
            begin, end = info["data_offsets"]
            f.seek(base + begin)
            chunks.append(f.read(end - begin))
    if not chunks:
        die(f"{path} holds no BF16 tensor")
    return b"".join(chunks)


def run_tk(bench, path, reps, threads):
    cmd = [bench, path, "--reps", str(reps), "--threads", ",".join(map(str, threads)), "--machine"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    machine = next((l["machine"] for l in lines if "machine" in l), None)
    return machine, [l for l in lines if l.get("bench") == "codec"]


def run_zipnn(data, reps, threads):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import zipnn
    results = []
    for t in threads:
        z = zipnn.ZipNN(input_format="byte", bytearray_dtype="bfloat16", threads=t)
        comp_wall, comp_cpu, dec_wall, dec_cpu = [], [], [], []
        frame = None
        for i in range(reps + 1):
            # ZipNN reorders the bits of its input in place: give it a fresh copy each run.
            src = bytearray(data)
            w, c = time.perf_counter(), time.process_time()
            frame = z.compress(src)
            w, c = time.perf_counter() - w, time.process_time() - c
            if i:
                comp_wall.append(w)
                comp_cpu.append(c)
            w, c = time.perf_counter(), time.process_time()
            back = z.decompress(frame)
            w, c = time.perf_counter() - w, time.process_time() - c
            if i:
                dec_wall.append(w)
                dec_cpu.append(c)
            if bytes(back) != data:
                die(f"ZipNN round trip differs (threads {t})")
        n = len(data)
        for case, wall, cpu in (("compress", comp_wall, comp_cpu), ("decompress", dec_wall, dec_cpu)):
            results.append({"bench": "codec", "codec": "zipnn", "case": case, "threads": t, "bytes": n,
                            "frame_bytes": len(frame), "ratio": n / len(frame), "runs": reps,
                            "median_s": statistics.median(wall), "min_s": min(wall), "max_s": max(wall),
                            "mb_per_s": n / statistics.median(wall) / 1e6,
                            "cpu_s": statistics.median(cpu), "cpu_mb_per_s": n / statistics.median(cpu) / 1e6})
    return results


def tbench_results(rows, input_name):
    """Measurements as tbench results: one cell per (codec, threads), both directions."""
    import tbench_form as form
    cells = {}
    for r in rows:
        cells.setdefault((r["codec"], r["threads"]), {})[r["case"]] = r
    results = []
    for (codec, t), cases in cells.items():
        c = cases["compress"]
        metrics = {"ratio": form.metric(c["ratio"], "x", "higher"),
                   "bits_per_value": form.metric(16 / c["ratio"], "bit", "lower")}
        for case, r in cases.items():
            m = form.metric(r["mb_per_s"], "MB/s", "higher")
            m.update({"min": r["bytes"] / r["max_s"] / 1e6, "max": r["bytes"] / r["min_s"] / 1e6, "runs": r["runs"]})
            metrics[f"{case}_mb_s"] = m
        method = "lossless" if codec != "zipnn" else "zipnn"
        impl = "tensorkit (tk_bench_codec)" if codec != "zipnn" else "ZipNN (Python)"
        results.append(form.result("compress", method, impl, input_name, metrics, {"level": 3, "threads": t}))
    return results


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--values", type=int, default=50_000_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data", help="a safetensors file; its BF16 tensors are the data")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--bench", default=os.path.join(root, "build", "bench", "tk_bench_codec"))
    parser.add_argument("--small", action="store_true", help="the CI size: 1M values, 2 runs, one thread")
    parser.add_argument("--json", help="write every measurement as JSON lines to this file")
    parser.add_argument("--tbench-json", help="write the results in the tbench form (docs/TBENCH.md) to this file")
    args = parser.parse_args()
    if args.small:
        args.values, args.reps, args.threads = 1_000_000, 2, "1"
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        die("--threads needs a list such as 1,2")
    if args.values < 1 or args.reps < 1 or any(t < 1 for t in threads):
        die("--values, --reps and --threads must be positive")
    if not os.access(args.bench, os.X_OK):
        die(f"{args.bench} not found (build the tk_bench_codec target, or pass --bench)")

    with tempfile.TemporaryDirectory() as work:
        if args.data:
            label = args.data
            data = read_bf16(args.data)
            # The C++ side codes every tensor of the file; give it the BF16 ones only.
            path = os.path.join(work, "bf16.safetensors")
            import numpy as np
            write_safetensors(path, np.frombuffer(data, dtype=np.uint16))
        else:
            bits = bf16_normal(args.values, args.seed)
            path = os.path.join(work, "bf16.safetensors")
            write_safetensors(path, bits)
            data = bits.tobytes()
            label = f"bf16 N(0, 0.02) x {args.values:,}, seed {args.seed}"
        machine, tk = run_tk(args.bench, path, args.reps, threads)
        have_zipnn = importlib.util.find_spec("zipnn") is not None
        zp = run_zipnn(data, args.reps, threads) if have_zipnn else []

    for r in tk + zp:
        r["data"] = label
    if args.json:
        with open(args.json, "w") as f:
            for r in tk + zp:
                f.write(json.dumps(r) + "\n")
    if args.tbench_json:
        import tbench_form as form
        name = os.path.basename(args.data) if args.data else f"bf16-normal-{args.values}"
        inputs = [{"name": name, "source": "file" if args.data else "synthetic", "dtype": "BF16",
                   "bytes": len(data), "shape": [len(data) // 2]}]
        results = tbench_results(tk + zp, name)
        if not have_zipnn:
            results += [form.result("compress", "zipnn", "ZipNN (Python)", name, {}, {"level": 3, "threads": t},
                                    "skipped", "the zipnn package is not installed") for t in threads]
        form.write(form.document("codec_vs_zipnn.py", sys.argv, inputs, results, args.reps, seed=args.seed),
                   args.tbench_json)
    if not have_zipnn:
        print("ZipNN: the zipnn package is not installed; its rows are skipped")
    if machine:
        print(f"machine: {machine.get('cpu_model')}, {machine.get('usable_cpus')} usable CPUs, "
              f"{machine.get('kernel')}, {machine.get('compiler')}")
    print(f"data: {label} ({len(data) / 1e6:.0f} MB); median of {args.reps} runs; MB/s of decoded bytes\n")
    print("| codec | threads | ratio | compress MB/s | decompress MB/s | compress MB/s per CPU-s | decompress MB/s per CPU-s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rows = {}
    for r in tk + zp:
        rows.setdefault((r["codec"], r["threads"]), {})[r["case"]] = r
    for (codec, t), cases in rows.items():
        c, d = cases["compress"], cases["decompress"]
        print(f"| {codec} | {t} | {c['ratio']:.4f} | {c['mb_per_s']:.0f} | {d['mb_per_s']:.0f} | "
              f"{c['cpu_mb_per_s']:.0f} | {d['cpu_mb_per_s']:.0f} |")


if __name__ == "__main__":
    main()
