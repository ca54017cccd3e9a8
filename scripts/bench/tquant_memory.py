#!/usr/bin/env python3
"""Peak memory of tquant against the model's size: the same seeded synthetic models
(make_quant_model.py, 512 x 1024 blocks, so the largest tensor is the same at every
size) at several sizes, each quantized with --scheme and --budget to safetensors and GGUF.

  tquant_memory.py [--tquant PATH] [--peer PATH] [--sizes 256M,1G,2G] [--work DIR]

Peak RSS is GNU time's %M (maximum resident set, file-backed pages included). --peer
runs a second tquant (e.g. an older build) on the same cases, interleaved.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BLOCK_BYTES = 18.6 * 2**20  # one --blocks step of make_quant_model.py at 512 x 1024

CASES = [
    ("--scheme int4", "out.safetensors"),
    ("--scheme q4k", "out.gguf"),
    ("--budget 4.5", "out.gguf"),
    ("--budget 4.5", "out.safetensors"),
]


def size_bytes(text):
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def peak_mib(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "%M %e"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"tquant_memory.py: error: {' '.join(cmd)} failed: {r.stderr.strip()[-400:]}")
    kib, secs = r.stderr.strip().splitlines()[-1].split()
    return int(kib) / 1024, float(secs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tquant", default=os.path.join(ROOT, "build", "tquant"))
    p.add_argument("--peer", help="a second tquant to run on the same cases")
    p.add_argument("--sizes", default="256M,1G,2G")
    p.add_argument("--cases", default="0,1,2,3", help="indices into the case list")
    p.add_argument("--work", help="directory for the models (default: a temporary one)")
    a = p.parse_args()
    tools = [("tquant", a.tquant)] + ([("peer", a.peer)] if a.peer else [])
    cases = [CASES[int(i)] for i in a.cases.split(",")]
    with tempfile.TemporaryDirectory(dir=a.work) as work:
        print("| model | case | " + " | ".join(f"{n} peak MiB | {n} s" for n, _ in tools) + " |")
        print("|---|---|" + "---:|---:|" * len(tools))
        for size in a.sizes.split(","):
            blocks = max(1, round(size_bytes(size) / BLOCK_BYTES))
            model = os.path.join(work, f"model-{size}.safetensors")
            subprocess.run([sys.executable, os.path.join(HERE, "make_quant_model.py"), model, "--rows", "512",
                            "--cols", "1024", "--blocks", str(blocks)], check=True)
            mib = os.path.getsize(model) / 2**20
            for flags, out in cases:
                row = []
                for _, tool in tools:
                    cmd = [tool, model] + flags.split() + ["-q", "-f", "-o", os.path.join(work, out)]
                    row += [*peak_mib(cmd)]
                cells = " | ".join(f"{row[i]:.0f} | {row[i + 1]:.1f}" for i in range(0, len(row), 2))
                print(f"| {mib:.0f} MiB | {flags} -o {out} | {cells} |", flush=True)
            os.remove(model)


if __name__ == "__main__":
    main()
