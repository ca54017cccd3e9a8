#!/usr/bin/env python3
"""tcompress's lossless coding against zstd -3 and raw storage, per tensor and per file,
and BitX against XOR + byte planes + zstd -19, on real weights.

  lossless_vs_zstd.py --bin DIR --model DIR --finetune FT.safetensors [--work DIR] [--json PATH]

The set (made in --work from the model directory of all-MiniLM-L6-v2, --model, and the
fine-tune that make_finetune_pair.py wrote from it, --finetune):
  minilm-f32      the model as shipped (f32)
  minilm-bf16     the same cast to bf16 (tconvert --dtype bf16)
  minilm-int8deq  a quantized model stored as floats: tquant --scheme int8, then
                  tquant dequant to f32 (255 levels per row, as 8-bit checkpoints are kept)
  minilm-q4k      a tquant output (--scheme q4k): packed codes, scales, integer parts
  ids-int64       an integer tensor: 4M token ids drawn from a Zipf law over the vocabulary
For each file: its size, `zstd -3` of the file, and tcompress's container; for each
tensor: its bytes, `zstd -3` of its bytes alone, and its record's stored bytes (from
tcompress -l). A tensor "loses" when its record stores more than either. Sizes are
deterministic, so one run is the measurement.

BitX: the fine-tune (f32, and both cast to bf16) against the base, with tcompress
--base (at the default level 3 and at --level 19) against XOR with the base + byte
planes + zstd -19 per plane (the method of the BitX paper's best variant, computed here
with the zstd CLI) and against tcompress of the fine-tune alone.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, **kw)


def zstd_size(data, level):
    return len(run(["zstd", f"-{level}", "-q", "-c", "-T1"] + (["--ultra"] if level > 19 else []),
                   input=data).stdout)


def tensors(path):
    """{name: raw bytes} of a safetensors file, parsed here (bf16 and packed parts too)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = (t["dtype"], data[b:e])
    return out


def listing(tbin, tkz):
    doc = json.loads(run([f"{tbin}/tcompress", "-l", tkz, "--json", "-"]).stdout)
    return {r["name"]: r for r in doc["records"] if r["kind"] == "tensor"}, doc["container_bytes"]


def measure_file(tbin, name, path, work):
    tkz = os.path.join(work, name + ".tkz")
    run([f"{tbin}/tcompress", "-q", "-f", path, "-o", tkz])
    records, container = listing(tbin, tkz)
    raw = os.path.getsize(path)
    with open(path, "rb") as f:
        z3 = zstd_size(f.read(), 3)
    losses, codecs, worst = [], {}, 0.0
    for tname, (dtype, data) in tensors(path).items():
        r = records[tname]
        codecs[r["codec"]] = codecs.get(r["codec"], 0) + 1
        z = zstd_size(data, 3)
        worst = max(worst, r["stored"] / max(1, min(z, len(data))))
        if r["stored"] > z or r["stored"] > len(data):
            losses.append({"tensor": tname, "bytes": len(data), "zstd3": z, "stored": r["stored"]})
    return {"file": name, "bytes": raw, "zstd3": z3, "tkz": container, "ratio_tkz": raw / container,
            "ratio_zstd3": raw / z3, "tensors": len(records), "codecs": codecs,
            "tensors_worse_than_zstd3_or_raw": losses,
            "worst_stored_over_best_of_zstd3_raw": round(worst, 4)}


def xor_planes_zstd19(base, tune):
    """Bytes of XOR + byte planes + zstd -19 of every tensor of `tune` (matched by name)."""
    total = 0
    for name, (dtype, data) in tune.items():
        width = {"F32": 4, "BF16": 2, "F16": 2, "I64": 8}.get(dtype, 1)
        a = np.frombuffer(data, np.uint8)
        b = np.frombuffer(base[name][1], np.uint8) if name in base and len(base[name][1]) == len(data) else None
        x = a ^ b if b is not None else a
        planes = x.reshape(-1, width).T if width > 1 and len(x) % width == 0 else x.reshape(1, -1)
        total += sum(zstd_size(np.ascontiguousarray(p).tobytes(), 19) for p in planes)
    return total


def measure_bitx(tbin, label, base_path, tune_path, work):
    out = {"pair": label, "bytes": os.path.getsize(tune_path)}
    for level in (3, 19):
        tkz = os.path.join(work, f"{label}-bitx{level}.tkz")
        run([f"{tbin}/tcompress", "-q", "-f", tune_path, "--base", base_path, "--level", str(level), "-o", tkz])
        back = os.path.join(work, f"{label}-back.safetensors")
        run([f"{tbin}/tcompress", "-q", "-f", "-d", tkz, "--base", base_path, "-o", back])
        if open(back, "rb").read() != open(tune_path, "rb").read():
            sys.exit(f"lossless_vs_zstd.py: error: BitX round trip differs ({label})")
        out[f"tkz_base_level{level}"] = os.path.getsize(tkz)
    alone = os.path.join(work, f"{label}-alone.tkz")
    run([f"{tbin}/tcompress", "-q", "-f", tune_path, "-o", alone])
    out["tkz_no_base"] = os.path.getsize(alone)
    out["xor_planes_zstd19"] = xor_planes_zstd19(tensors(base_path), tensors(tune_path))
    for k in ("tkz_base_level3", "tkz_base_level19", "tkz_no_base", "xor_planes_zstd19"):
        out["ratio_" + k] = round(out["bytes"] / out[k], 3)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--finetune", required=True)
    ap.add_argument("--work")
    ap.add_argument("--json")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="lossless-bench-")
    os.makedirs(work, exist_ok=True)
    tbin = args.bin
    model = os.path.join(args.model, "model.safetensors")
    files = {"minilm-f32": model}

    def make(name, cmd):
        path = os.path.join(work, name + ".safetensors")
        run(cmd + ["-o", path, "-f", "-q"])
        files[name] = path
        return path

    make("minilm-bf16", [f"{tbin}/tconvert", model, "--dtype", "bf16"])
    q8 = os.path.join(work, "q8.safetensors")
    run([f"{tbin}/tquant", model, "--scheme", "int8", "-o", q8, "-f", "-q"])
    make("minilm-int8deq", [f"{tbin}/tquant", "dequant", q8, "--dtype", "f32"])
    make("minilm-q4k", [f"{tbin}/tquant", model, "--scheme", "q4k"])
    ids = np.minimum(np.random.default_rng(0).zipf(1.3, 4 << 20), 30521).astype(np.int64)
    from safetensors.numpy import save_file
    files["ids-int64"] = os.path.join(work, "ids-int64.safetensors")
    save_file({"input_ids": ids.reshape(4096, 1024)}, files["ids-int64"])

    results = {"files": [measure_file(tbin, n, p, work) for n, p in files.items()]}
    base_bf16 = files["minilm-bf16"]
    tune_bf16 = os.path.join(work, "ft-bf16.safetensors")
    run([f"{tbin}/tconvert", args.finetune, "--dtype", "bf16", "-o", tune_bf16, "-f", "-q"])
    results["bitx"] = [measure_bitx(tbin, "minilm-ft-f32", model, args.finetune, work),
                       measure_bitx(tbin, "minilm-ft-bf16", base_bf16, tune_bf16, work)]
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
