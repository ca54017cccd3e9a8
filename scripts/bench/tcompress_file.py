#!/usr/bin/env python3
"""tcompress from file to file against the same codec in-process, the disk, and zstd.

  tcompress_file.py --bin BUILD [--values N] [--data FILE] [--rounds N] [--threads LIST]
                    [--work DIR]

Data: N bf16 values from N(0, 0.02), seeded, in 50 tensors (default 500M values, 1 GB),
written once into --work (default: a directory under the build tree), or the file
given with --data. Every round runs, for each thread count T, in an order that rotates
from round to round (A, B, C, ...; B, C, ..., A):
  in-process   BUILD/bench/tk_bench_codec FILE --threads T: the codec on bytes in memory
  compress     BUILD/tcompress FILE -o W/x.tkz -j T
  decompress   BUILD/tcompress -d W/x.tkz -o W/x.out -j T
  write floor  dd from /dev/zero into a new file in W, as many bytes as each direction
               writes (the .tkz, then the restored file): the disk's bandwidth for it
  zstd         zstd -3 -T1 FILE and zstd -d on the same file, as the familiar peer
Outputs are removed and the page cache's dirty pages written back (sync) before each
timed command, outside its time. The restored file is compared with the input once.
Prints medians (and ranges) in MB/s of original bytes, and for each direction the share
of its bound: the lower of the in-process codec and the write floor.
"""
import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import time


def die(msg):
    sys.exit(f"tcompress_file.py: error: {msg}")


def make_data(path, values, seed=42):
    import numpy as np
    rng = np.random.default_rng(seed)
    per = values // 50
    header, off = {}, 0
    for i in range(50):
        header[f"t{i}"] = {"dtype": "BF16", "shape": [per], "data_offsets": [off, off + 2 * per]}
        off += 2 * per
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".part", "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for _ in range(50):
            u = rng.normal(0.0, 0.02, per).astype(np.float32).view(np.uint32)
            f.write(((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes())
    os.replace(path + ".part", path)


def timed(cmd, out=None):
    if out is not None and os.path.exists(out):
        os.remove(out)
    os.sync()
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t
    if r.returncode != 0:
        die(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return elapsed


def in_process(bench, data, threads):
    r = subprocess.run([bench, data, "--reps", "1", "--threads", str(threads)],
                       capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return {row["case"]: row["median_s"] for row in rows if row.get("bench") == "codec"}


def write_floor(path, nbytes):
    return timed(["dd", "if=/dev/zero", f"of={path}", "bs=8M", f"count={nbytes}", "iflag=count_bytes",
                  "status=none"], out=path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--values", type=int, default=500_000_000)
    parser.add_argument("--data")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--work")
    args = parser.parse_args()
    tcompress = os.path.join(args.bin, "tcompress")
    bench = os.path.join(args.bin, "bench", "tk_bench_codec")
    for exe in (tcompress, bench):
        if not os.access(exe, os.X_OK):
            die(f"{exe} not found (build it first)")
    work = args.work or os.path.join(args.bin, "bench-tcompress-file")
    os.makedirs(work, exist_ok=True)
    data = args.data
    if data is None:
        data = os.path.join(work, f"bf16-{args.values}.safetensors")
        if not os.path.exists(data):
            make_data(data, args.values)
    original = os.path.getsize(data)
    tkz, back = os.path.join(work, "x.tkz"), os.path.join(work, "x.out")
    zst, zback = os.path.join(work, "x.zst"), os.path.join(work, "x.zst.out")
    floor_file = os.path.join(work, "floor")
    threads = [int(t) for t in args.threads.split(",")]

    timed([tcompress, data, "-o", tkz, "-f"], out=tkz)
    timed([tcompress, "-d", tkz, "-o", back, "-f"], out=back)
    if not filecmp.cmp(data, back, shallow=False):
        die("the restored file differs from the input")
    stored = os.path.getsize(tkz)

    times = {}

    def add(key, seconds):
        times.setdefault(key, []).append(seconds)

    jobs = []
    for t in threads:
        jobs.append(("in-process", t, lambda t=t: [add(("in-process", c, t), s)
                                                    for c, s in in_process(bench, data, t).items()]))
        jobs.append(("compress", t, lambda t=t: add(("tcompress", "compress", t),
                                                     timed([tcompress, data, "-o", tkz, "-j", str(t), "-f"], tkz))))
        jobs.append(("decompress", t, lambda t=t: add(("tcompress", "decompress", t),
                                                       timed([tcompress, "-d", tkz, "-o", back, "-j", str(t), "-f"],
                                                             back))))
    jobs.append(("floor", 0, lambda: (add(("write floor", "compress", 0), write_floor(floor_file, stored)),
                                      add(("write floor", "decompress", 0), write_floor(floor_file, original)))))
    jobs.append(("zstd", 1, lambda: (add(("zstd -3", "compress", 1),
                                          timed(["zstd", "-3", "-T1", "-q", "-f", data, "-o", zst], zst)),
                                     add(("zstd -d", "decompress", 1),
                                         timed(["zstd", "-d", "-q", "-f", zst, "-o", zback], zback)))))
    for r in range(args.rounds):
        k = r % len(jobs)
        for _, _, job in jobs[k:] + jobs[:k]:
            job()
    for path in (back, zback, floor_file):
        if os.path.exists(path):
            os.remove(path)

    mb = original / 1e6

    def speed(key):
        s = times[key]
        return mb / statistics.median(s), mb / max(s), mb / min(s)

    print(f"data: {os.path.basename(data)}, {original / 1e6:.1f} MB -> {stored / 1e6:.1f} MB "
          f"(ratio {original / stored:.4f}); zstd -3: {original / os.path.getsize(zst):.4f}; "
          f"{args.rounds} rounds, interleaved; MB/s of original bytes, median (range)\n")
    print("| direction | threads | tcompress file to file | in-process codec | write floor | "
          "share of the lower bound | zstd |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for direction, peer in (("compress", "zstd -3"), ("decompress", "zstd -d")):
        floor = speed(("write floor", direction, 0))
        for t in threads:
            cli, inproc = speed(("tcompress", direction, t)), speed(("in-process", direction, t))
            bound = min(inproc[0], floor[0])
            z = speed((peer, direction, 1))
            cells = [f"{v[0]:.0f} ({v[1]:.0f}-{v[2]:.0f})" for v in (cli, inproc, floor, z)]
            print(f"| {direction} | {t} | {cells[0]} | {cells[1]} | {cells[2]} | {100 * cli[0] / bound:.0f}% "
                  f"| {cells[3]} |")


if __name__ == "__main__":
    main()
