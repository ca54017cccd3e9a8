#!/usr/bin/env python3
"""tcompress against `zstd -3` on small and non-tensor files: output sizes.

  tcompress_small_vs_zstd.py [--bin DIR] [--old-bin DIR] [FILE ...]

The set: JSON text of 0 B, 1 B, 70 B, 1 KB, 10 KB and 100 KB (cut from a generated
tokenizer-like vocabulary), a safetensors file of one 4x4 f32 tensor, the
config.json, tokenizer.json and model.safetensors of all-MiniLM-L6-v2 when its model
directory is in the reference environment, and any FILE given. For each: the bytes of
`zstd -3 -c FILE` and of `tcompress FILE` (and of the build in --old-bin, if given), each
round trip checked byte for byte. Prints a Markdown table; sizes are deterministic.
"""
import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL_DIR = os.path.join(ROOT, ".venv", "models", "all-minilm-l6-v2")


def make_set(work):
    files = []
    vocab = {"##" * (i % 3 == 0) + "tok" + format(i * 2654435761 % 99991, "x"): i for i in range(12000)}
    text = json.dumps({"version": "1.0", "model": {"type": "WordPiece", "vocab": vocab}}, indent=2)
    for name, n in (("0 B", 0), ("1 B", 1), ("70 B", 70), ("1 KB", 1024), ("10 KB", 10240), ("100 KB", 102400)):
        path = os.path.join(work, "text%d.json" % n)
        with open(path, "w") as f:
            f.write(text[:n])
        files.append(("JSON text, " + name, path))
    import numpy as np
    from safetensors.numpy import save_file

    tiny = os.path.join(work, "tiny.safetensors")
    save_file({"w": np.arange(16, dtype=np.float32).reshape(4, 4)}, tiny)
    files.append(("safetensors, one 4x4 f32", tiny))
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        path = os.path.join(MODEL_DIR, name)
        if os.path.exists(path):
            files.append(("all-MiniLM-L6-v2 " + name, path))
    return files


def tcompress_bytes(bin_dir, path, work):
    tool = os.path.join(bin_dir, "tcompress")
    out, back = os.path.join(work, "out.tkz"), os.path.join(work, "back")
    subprocess.run([tool, "-q", "-f", path, "-o", out], check=True)
    subprocess.run([tool, "-q", "-f", "-d", out, "-o", back], check=True)
    if not filecmp.cmp(path, back, shallow=False):
        sys.exit(f"{tool}: {path} did not round-trip")
    return os.path.getsize(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(ROOT, "build"))
    p.add_argument("--old-bin")
    p.add_argument("files", nargs="*")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        files = make_set(work) + [(os.path.basename(f), f) for f in a.files]
        head = "| file | bytes | `zstd -3` bytes |" + (" tcompress (old) |" if a.old_bin else "")
        head += " tcompress | tcompress / zstd |"
        print(head)
        print("|---" * head.count(" |") + "|")
        for name, path in files:
            zstd = len(subprocess.run(["zstd", "-3", "-c", path], check=True, capture_output=True).stdout)
            row = f"| {name} | {os.path.getsize(path):,} | {zstd:,} |"
            if a.old_bin:
                row += f" {tcompress_bytes(a.old_bin, path, work):,} |"
            ours = tcompress_bytes(a.bin, path, work)
            row += f" {ours:,} | {ours / zstd:.4f} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
