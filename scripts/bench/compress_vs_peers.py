#!/usr/bin/env python3
"""tcompress against its peers, same data, same run.

  compress_vs_peers.py [--values N] [--tensors K] [--seed S] [--reps N] [--threads LIST]
                       [--bin DIR] [--skip-peers] [--small] [--json PATH] [--tbench-json PATH]

Data: N bf16 values (default 50M) drawn from N(0, 0.02) with seed S, split into K
tensors of one safetensors file (default 50). Measured, median of --reps runs after a
warm-up, for each thread count T of LIST (default 1,2):
  tcompress      tcompress -j T FILE -o OUT.tkz / tcompress -d -j T OUT.tkz -o BACK
  zstd -3, -19   zstd -T T FILE / zstd -d (the CLI; -19 once, one thread: it takes minutes)
  ZipNN          zipnn.ZipNN(bytearray_dtype="bfloat16", threads=T) on the tensor bytes,
                 as scripts/bench/codec_vs_zipnn.py runs it (in process: no file I/O)
Ratio is original bytes over compressed bytes; MB/s is original bytes per wall second of
the whole command (process start and file I/O included for the CLIs). Every round trip
is checked byte for byte.

BitX: a fine-tune of the same file in which every value gets N(0, 5e-4) added and is
rounded back to bf16 (all tensors changed, then only 10% of them), compressed with
--base against the original: ratio, and MB/s both ways.

ZipNN is optional: without the zipnn package its rows are reported as skipped. --small
runs the CI size (1M values in 4 tensors, 2 runs, one thread, zstd -19 left out).
--json writes one JSON line per row; --tbench-json the tbench result form
(docs/TBENCH.md), which `tbench compare` reads.
"""
import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codec_vs_zipnn import run_zipnn  # noqa: E402  (the same ZipNN measurement)
import tbench_form as form  # noqa: E402


def die(msg):
    sys.exit(f"compress_vs_peers.py: error: {msg}")


def to_bf16(x):
    import numpy as np
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    import numpy as np
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write_model(path, tensors):
    """Write {name: uint16 array of bf16 bits} as safetensors."""
    import struct
    header, offset = {}, 0
    for name, bits in tensors.items():
        header[name] = {"dtype": "BF16", "shape": [int(bits.size)], "data_offsets": [offset, offset + bits.nbytes]}
        offset += bits.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for bits in tensors.values():
            f.write(bits.tobytes())


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t


def same(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


def measure(name, threads, reps, compress, decompress, original, packed, restored, warm_up=True):
    comp, dec = [], []
    for i in range(reps + 1 if warm_up else reps):
        c = timed(compress)
        d = timed(decompress)
        if not same(original, restored):
            die(f"{name}: round trip differs")
        if i or not warm_up:
            comp.append(c)
            dec.append(d)
    n = os.path.getsize(original)
    return {"tool": name, "threads": threads, "bytes": n, "stored": os.path.getsize(packed),
            "ratio": n / os.path.getsize(packed), "runs": reps,
            "compress_mb_s": n / statistics.median(comp) / 1e6, "decompress_mb_s": n / statistics.median(dec) / 1e6,
            "compress_s": comp, "decompress_s": dec}


def zstd_version():
    out = subprocess.run(["zstd", "--version"], capture_output=True, text=True).stdout
    words = [w.strip(",") for w in out.split() if w.strip(",v").replace(".", "").isdigit()]
    return f"zstd {words[0].lstrip('v')} (CLI)" if words else "zstd (CLI)"


def tbench_results(rows, input_name):
    """The rows as tbench results: one cell per (tool, level, threads)."""
    results = []
    for r in rows:
        tool, params = r["tool"], {"threads": r["threads"]}
        if tool == "tcompress":
            method, impl = "tcompress", "tensorkit (tcompress CLI)"
        elif tool.startswith("zstd"):
            method, impl = "zstd-cli", r.get("impl", "zstd (CLI)")
            params["level"] = int(tool.split()[1].lstrip("-"))
        elif tool == "ZipNN":
            method, impl = "zipnn", r.get("impl", "ZipNN (Python)")
        else:
            method, impl = "tcompress-bitx", "tensorkit (tcompress CLI)"
            params["changed"] = "all" if "all" in tool else "10%"
        if r.get("skipped"):
            results.append(form.result("compress", method, impl, input_name, {}, params, "skipped", r["skipped"]))
            continue
        metrics = {"ratio": form.metric(r["ratio"], "x", "higher"),
                   "bits_per_value": form.metric(16 / r["ratio"], "bit", "lower")}
        for case in ("compress", "decompress"):
            if f"{case}_s" in r:
                metrics[f"{case}_mb_s"] = form.rate(r[f"{case}_s"], r["bytes"])
            elif f"{case}_mb_s" in r:
                metrics[f"{case}_mb_s"] = form.metric(r[f"{case}_mb_s"], "MB/s", "higher")
        results.append(form.result("compress", method, impl, input_name, metrics, params))
    return results


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--values", type=int, default=50_000_000)
    p.add_argument("--tensors", type=int, default=50)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--bin", default=os.path.join(root, "build"), help="directory holding tcompress")
    p.add_argument("--skip-peers", action="store_true", help="measure tcompress only")
    p.add_argument("--small", action="store_true", help="the CI size: 1M values, 4 tensors, 2 runs, 1 thread")
    p.add_argument("--json", help="write every measurement as JSON lines to this file")
    p.add_argument("--tbench-json", help="write the results in the tbench form (docs/TBENCH.md) to this file")
    a = p.parse_args()
    if a.small:
        a.values, a.tensors, a.reps, a.threads = 1_000_000, 4, 2, "1"
    threads = [int(t) for t in a.threads.split(",")]
    tc = os.path.join(a.bin, "tcompress")
    if not os.access(tc, os.X_OK):
        die(f"{tc} not found (build the tcompress target, or pass --bin)")
    if not a.skip_peers and shutil.which("zstd") is None:
        die("the zstd CLI is needed for the peers (or pass --skip-peers)")
    import numpy as np

    rows = []
    with tempfile.TemporaryDirectory() as w:
        rng = np.random.default_rng(a.seed)
        per = a.values // a.tensors
        base = {f"layer.{i}.weight": to_bf16(rng.normal(0, 0.02, per)) for i in range(a.tensors)}
        orig = os.path.join(w, "model.safetensors")
        write_model(orig, base)
        f = lambda name: os.path.join(w, name)  # noqa: E731
        print(f"# data: bf16 N(0, 0.02) x {per * a.tensors:,} in {a.tensors} tensors, seed {a.seed}; "
              f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}", flush=True)
        for t in threads:
            rows.append(measure("tcompress", t, a.reps, [tc, "-q", "-f", "-j", str(t), orig, "-o", f("m.tkz")],
                                [tc, "-q", "-f", "-d", "-j", str(t), f("m.tkz"), "-o", f("back")], orig, f("m.tkz"),
                                f("back")))
            if a.skip_peers:
                continue
            # zstd -19 takes minutes on this much data: one run, at the first thread count.
            for level, reps in (("-3", a.reps), ("-19", 1)):
                if level == "-19" and (t != threads[0] or a.small):
                    continue
                rows.append(measure(f"zstd {level}", t, reps,
                                    ["zstd", "-q", "-f", level, f"-T{t}", orig, "-o", f("m.zst")],
                                    ["zstd", "-q", "-f", "-d", f("m.zst"), "-o", f("back")], orig, f("m.zst"),
                                    f("back"), warm_up=level != "-19"))
        if not a.skip_peers and importlib.util.find_spec("zipnn") is None:
            print("# ZipNN: the zipnn package is not installed; its rows are skipped", flush=True)
            rows += [{"tool": "ZipNN", "threads": t, "skipped": "the zipnn package is not installed"} for t in threads]
        elif not a.skip_peers:
            data = b"".join(v.tobytes() for v in base.values())
            for r in run_zipnn(data, a.reps, threads):
                row = next((x for x in rows if x["tool"] == "ZipNN" and x["threads"] == r["threads"]), None)
                if row is None:
                    row = {"tool": "ZipNN", "threads": r["threads"], "bytes": r["bytes"], "stored": r["frame_bytes"],
                           "ratio": r["ratio"], "runs": r["runs"]}
                    rows.append(row)
                row[r["case"] + "_mb_s"] = r["mb_per_s"]

        # BitX: every value moved by N(0, 5e-4) and rounded to bf16; then 10% of tensors.
        drng = np.random.default_rng(a.seed + 1)
        tuned = {k: to_bf16(bf16_to_f32(v) + drng.normal(0, 5e-4, v.size)) for k, v in base.items()}
        some = {k: (tuned[k] if i % 10 == 0 else v) for i, (k, v) in enumerate(base.items())}
        for label, model in (("BitX, all tensors changed", tuned), ("BitX, 10% of tensors changed", some)):
            ft = f("ft.safetensors")
            write_model(ft, model)
            for t in threads:
                row = measure(label, t, a.reps, [tc, "-q", "-f", "-j", str(t), ft, "--base", orig, "-o", f("ft.tkz")],
                              [tc, "-q", "-f", "-d", "-j", str(t), "--base", orig, f("ft.tkz"), "-o", f("back")], ft,
                              f("ft.tkz"), f("back"))
                rows.append(row)

    print("| tool | threads | ratio | compress MB/s | decompress MB/s |")
    print("|---|---|---|---|---|")
    for r in rows:
        if r.get("skipped"):
            print(f"| {r['tool']} | {r['threads']} | skipped: {r['skipped']} | | |")
            continue
        print(f"| {r['tool']} | {r['threads']} | {r['ratio']:.3f} | {r.get('compress_mb_s', 0):.0f} | "
              f"{r.get('decompress_mb_s', 0):.0f} |")
    if a.tbench_json:
        name = f"bf16-normal-{per * a.tensors}"
        inputs = [{"name": name, "source": "synthetic", "dist": "gaussian", "shape": [per * a.tensors],
                   "dtype": "BF16", "bytes": 2 * per * a.tensors}]
        results = tbench_results(rows, name)
        zv = zstd_version() if shutil.which("zstd") else None
        for r in results:
            if zv and r["method"] == "zstd-cli":
                r["implementation"] = zv
        form.write(form.document("compress_vs_peers.py", sys.argv, inputs, results, a.reps, seed=a.seed), a.tbench_json)
    if a.json:
        with open(a.json, "w") as out:
            for r in rows:
                out.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
