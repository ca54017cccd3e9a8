#!/usr/bin/env python3
"""Open a safetensors file with a huge header (COUNT tiny tensors, default 10^6 F32 [1],
a 68 MB header) with tensorkit and with the reference (the Python safetensors package,
Rust inside), interleaved A,B,A,B over ROUNDS rounds, and print a Markdown table of the
medians.

    scripts/bench/header_vs_safetensors.py [--count N] [--rounds R] [--bin build] [--dir DIR]

Measured per round:
- `tinfo FILE > /dev/null`: wall time of the whole process (open, validate, and print
  one line per tensor);
- the reference, in one Python process: `safe_open(FILE, 'np')` then `f.keys()`, timed
  in process (the open only), and the wall time of that process;
- Python's startup and `from safetensors import safe_open`, alone (the part of the
  reference's wall time that is not the open).
The ratio compares tinfo's whole-process wall time with the reference's in-process open.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REFERENCE = ("import sys, time\n"
             "from safetensors import safe_open\n"
             "t0 = time.perf_counter()\n"
             "f = safe_open(sys.argv[1], 'np')\n"
             "k = f.keys()\n"
             "print(time.perf_counter() - t0, len(k))\n")
STARTUP = "from safetensors import safe_open\n"


def write_file(path, count):
    """COUNT F32 [1] tensors named t0000000..., in data order, zero data."""
    parts = []
    for i in range(count):
        parts.append('"t%07d":{"dtype":"F32","shape":[1],"data_offsets":[%d,%d]}' % (i, 4 * i, 4 * i + 4))
    header = ("{" + ",".join(parts) + "}").encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        f.write(bytes(4 * count))
    return len(header)


def wall(cmd, stdout=subprocess.DEVNULL):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, stdout=stdout, check=True)
    return time.perf_counter() - t0, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bin", default="build")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    tinfo = os.path.join(a.bin, "tinfo")
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        path = os.path.join(d, "many.safetensors")
        header_bytes = write_file(path, a.count)
        for _ in range(2):  # warm the page cache and both programs
            wall([tinfo, path])
            wall([sys.executable, "-c", REFERENCE, path])
        rows = {"tinfo": [], "ref_open": [], "ref_wall": [], "startup": []}
        for _ in range(a.rounds):
            rows["tinfo"].append(wall([tinfo, path])[0])
            t, out = wall([sys.executable, "-c", REFERENCE, path], stdout=subprocess.PIPE)
            opened, keys = out.split()
            if int(keys) != a.count:
                sys.exit("the reference saw %s tensors, expected %d" % (keys, a.count))
            rows["ref_open"].append(float(opened))
            rows["ref_wall"].append(t)
            rows["startup"].append(wall([sys.executable, "-c", STARTUP])[0])
    med = {k: statistics.median(v) for k, v in rows.items()}
    import safetensors
    print("- machine: %s, %d logical CPUs, Python %s, safetensors %s" %
          (platform.processor() or platform.machine(), os.cpu_count(), platform.python_version(),
           safetensors.__version__))
    print("- file: %d F32 [1] tensors, header %.1f MB; %d interleaved rounds, medians; load average %s" %
          (a.count, header_bytes / 1e6, a.rounds, " ".join("%.2f" % x for x in os.getloadavg())))
    print()
    print("| measurement | median s | runs (s) |")
    print("|---|---:|---|")
    label = {"tinfo": "`tinfo FILE > /dev/null` (wall, whole process)",
             "ref_open": "reference: `safe_open(FILE, 'np')` + `keys()` (in process)",
             "ref_wall": "reference: the same Python process (wall)",
             "startup": "reference: Python startup + `import safetensors` alone (wall)"}
    for k in ("tinfo", "ref_open", "ref_wall", "startup"):
        print("| %s | %.3f | %s |" % (label[k], med[k], ", ".join("%.3f" % x for x in rows[k])))
    print()
    print("tinfo wall / reference open: %.2fx (target <= 2x)" % (med["tinfo"] / med["ref_open"]))
    print(json.dumps({k: round(v, 4) for k, v in med.items()}))


if __name__ == "__main__":
    main()
