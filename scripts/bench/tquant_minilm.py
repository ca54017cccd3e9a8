#!/usr/bin/env python3
"""tquant on a real pretrained model: all-MiniLM-L6-v2 (a 6-layer BERT, 22.7M weights).

For each configuration (q4k, nf4, int4 with groups of 128, --budget 4.5) this quantizes
the model, dequantizes it, and checks with numpy alone:
- each quantized tensor's bits per weight, from the bytes of its parts in the file,
  against the report;
- each tensor's SQNR, from the dequantized values, against the report;
- the cosine similarity of the sentence embeddings (mean-pooled last hidden states) of
  the dequantized model to the original's, on fixed sentences, through a BERT forward
  pass written here in numpy (the model's own config; WordPiece from its tokenizer.json;
  it gives the model's known similarities, 0.755 between "A man is eating food." and
  "A man is eating a piece of bread.").

Prints one JSON document; with --check, exits 1 when a figure is outside its bound
(what `make test` runs, tests/cli/tquant/minilm.sh).

  scripts/bench/tquant_minilm.py --tquant build/tquant --model .venv/models/all-minilm-l6-v2
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file
from scipy.special import erf

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Quantization stores each weight in a few bits.",
    "A checkpoint is written while training goes on.",
    "Tensor decompositions find low-rank structure in data.",
    "It rained all afternoon, so the match was postponed.",
]

# flags, and the least cosine similarity of the embeddings that --check accepts (a
# little under what this model gives: 4-bit weights cost it 2-5% of cosine, 8-bit none).
CONFIGS = {
    "int8": (["--scheme", "int8"], 0.999),
    "q4k": (["--scheme", "q4k"], 0.97),
    "nf4": (["--scheme", "nf4"], 0.965),
    "int4-g128": (["--scheme", "int4", "--group-size", "128"], 0.945),
    "budget-4.5": (["--budget", "4.5"], 0.965),
}


def wordpiece(text, vocab):
    """BERT's uncased basic tokenizer and greedy longest-match WordPiece."""
    words, cur = [], ""
    for ch in text.lower():
        if ch.isspace():
            if cur:
                words.append(cur)
            cur = ""
        elif not ch.isalnum():
            if cur:
                words.append(cur)
            words.append(ch)
            cur = ""
        else:
            cur += ch
    if cur:
        words.append(cur)
    ids = [vocab["[CLS]"]]
    for w in words:
        start = 0
        while start < len(w):
            end = len(w)
            while end > start:
                piece = w[start:end] if start == 0 else "##" + w[start:end]
                if piece in vocab:
                    ids.append(vocab[piece])
                    break
                end -= 1
            if end == start:
                ids.append(vocab["[UNK]"])
                break
            start = end
    ids.append(vocab["[SEP]"])
    return np.array(ids)


def layer_norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def embed(w, cfg, ids):
    """Mean-pooled last hidden state of BERT for one sentence (float64)."""
    eps = cfg["layer_norm_eps"]
    heads = cfg["num_attention_heads"]
    p = lambda k: w[k].astype(np.float64)
    n = len(ids)
    h = p("embeddings.word_embeddings.weight")[ids] + p("embeddings.position_embeddings.weight")[:n] + \
        p("embeddings.token_type_embeddings.weight")[0]
    h = layer_norm(h, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"), eps)
    d = h.shape[1] // heads
    for i in range(cfg["num_hidden_layers"]):
        a = f"encoder.layer.{i}."
        lin = lambda x, name: x @ p(a + name + ".weight").T + p(a + name + ".bias")
        q = lin(h, "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
        k = lin(h, "attention.self.key").reshape(n, heads, d).transpose(1, 0, 2)
        v = lin(h, "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, heads * d)
        h = layer_norm(h + lin(ctx, "attention.output.dense"), p(a + "attention.output.LayerNorm.weight"),
                       p(a + "attention.output.LayerNorm.bias"), eps)
        inter = lin(h, "intermediate.dense")
        inter = 0.5 * inter * (1 + erf(inter / np.sqrt(2)))
        h = layer_norm(h + lin(inter, "output.dense"), p(a + "output.LayerNorm.weight"),
                       p(a + "output.LayerNorm.bias"), eps)
    return h.mean(0)


def part_bits(f, name):
    s = f.get_slice(name)
    n = int(np.prod(s.get_shape())) if s.get_shape() else 1
    bits = {"U8": 8, "I8": 8, "F16": 16, "BF16": 16, "F32": 32, "U16": 16, "I16": 16, "I32": 32, "U32": 32,
            "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "F6_E2M3": 6, "F6_E3M2": 6, "F4": 4}[s.get_dtype()]
    return n * bits


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tquant", required=True)
    ap.add_argument("--model", required=True, help="directory with model.safetensors, config.json, tokenizer.json")
    ap.add_argument("--work", default=None)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="tk-minilm-")
    src = os.path.join(args.model, "model.safetensors")
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    vocab = json.load(open(os.path.join(args.model, "tokenizer.json")))["model"]["vocab"]
    ids = [wordpiece(s, vocab) for s in SENTENCES]
    original = load_file(src)
    base = [embed(original, cfg, i) for i in ids]

    out, failures = {"model": "all-MiniLM-L6-v2", "configs": {}}, []
    for label, (flags, least_cosine) in CONFIGS.items():
        q = os.path.join(work, label + ".safetensors")
        report_path = os.path.join(work, label + ".json")
        t0 = time.perf_counter()
        subprocess.run([args.tquant, src, *flags, "-q", "-f", "-o", q, "--json", report_path], check=True,
                       stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - t0
        dq = os.path.join(work, label + "-dq.safetensors")
        subprocess.run([args.tquant, "dequant", q, "-q", "-f", "-o", dq], check=True)
        report = json.load(open(report_path))
        f = safe_open(q, "np")
        keys = list(f.keys())
        restored = load_file(dq)
        worst_bpw_gap, worst_db_gap, quantized = 0.0, 0.0, 0
        for t in report["tensors"]:
            if t["action"] != "quantize":
                continue
            quantized += 1
            n = int(np.prod(t["shape"]))
            bits = sum(part_bits(f, k) for k in keys if k.startswith(t["name"] + "."))
            worst_bpw_gap = max(worst_bpw_gap, abs(bits / n - t["bpw"]))
            x = original[t["name"]].astype(np.float64)
            y = restored[t["name"]].astype(np.float64)
            db = 10 * np.log10(np.sum(x * x) / np.sum((x - y) ** 2))
            worst_db_gap = max(worst_db_gap, abs(db - t["sqnr_db"]))
        cos = []
        for i, e in zip(ids, base):
            e2 = embed(restored, cfg, i)
            cos.append(float(e @ e2 / np.linalg.norm(e) / np.linalg.norm(e2)))
        tot = report["totals"]
        out["configs"][label] = {
            "flags": " ".join(flags), "seconds": round(seconds, 2), "quantized": quantized, "bpw": tot["bpw"],
            "sqnr_db_median": tot["sqnr_db_median"], "sqnr_db_energy_weighted": tot["sqnr_db_energy_weighted"],
            "sqnr_db_worst": tot["sqnr_db_worst"], "worst_tensor": tot["worst_tensor"],
            "cosine_min": min(cos), "cosine_mean": float(np.mean(cos)),
            "bpw_gap_max": worst_bpw_gap, "sqnr_db_gap_max": worst_db_gap,
        }
        if worst_bpw_gap > 1e-9:
            failures.append(f"{label}: bpw from the file differs from the report by {worst_bpw_gap}")
        if worst_db_gap > 1e-6:
            failures.append(f"{label}: numpy's SQNR differs from the report by {worst_db_gap} dB")
        if quantized != 37:
            failures.append(f"{label}: {quantized} tensors quantized, expected the 37 weight matrices")
        if min(cos) < least_cosine:
            failures.append(f"{label}: embedding cosine similarity {min(cos):.4f} < {least_cosine}")
        if label == "budget-4.5" and not 4.49 <= tot["bpw"] <= 4.5:
            failures.append(f"{label}: {tot['bpw']} bpw, not within [4.49, 4.5]")
    print(json.dumps(out, indent=1))
    for f_ in failures:
        print("FAIL", f_, file=sys.stderr)
    if args.check and failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
