#!/usr/bin/env python3
"""tquant --budget against llama.cpp's llama-quantize Q4_K_M on an LLM-shaped model.

The model: LAYERS llama blocks of 4096 x 4096 attention matrices (q, k, v, o) and
11008 x 4096 / 4096 x 11008 MLP matrices, RMS norms, a small vocabulary (embedding and
output head of VOCAB rows), in bf16. Weights are Student-t (nu = 5) at 0.02 with a
log-normal scale per row and a few large columns, seeded: closer to trained weights than
a Gaussian. The same tensors are written twice, as a GGUF (llama names, what
llama-quantize reads) and as a safetensors file (HF names, what tquant reads).

Both run on the same cores (2 threads each), interleaved A, B, A, B, ROUNDS times; the
figure is the median wall time. tquant's budget is the bits per weight llama-quantize's
Q4_K_M output spends on the same weight matrices, so both land at the same size; each
output is dequantized (gguf-py's numpy decoders for llama's, `tquant dequant` for
tquant's) and the SQNR is computed here, on the same tensors, three ways: energy-weighted
over all matrices, the median over tensors, and the worst tensor.

Needs a llama.cpp checkout with llama-quantize built (--llama DIR: DIR/build/bin and
DIR/gguf-py), numpy and ml_dtypes.

  scripts/bench/tquant_vs_llama_quantize.py --tquant build/tquant --llama ../llama.cpp \
      --layers 2 --rounds 3 --work /tmp/llm-bench
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time
import types

import ml_dtypes
import numpy as np

HIDDEN, FFN = 4096, 11008


def model_tensors(layers, vocab, seed):
    """(gguf name, hf name, shape) in file order, and a generator of bf16 values."""
    out = [("token_embd.weight", "model.embed_tokens.weight", (vocab, HIDDEN))]
    for i in range(layers):
        for g, h, shape in [("attn_q", "self_attn.q_proj", (HIDDEN, HIDDEN)),
                            ("attn_k", "self_attn.k_proj", (HIDDEN, HIDDEN)),
                            ("attn_v", "self_attn.v_proj", (HIDDEN, HIDDEN)),
                            ("attn_output", "self_attn.o_proj", (HIDDEN, HIDDEN)),
                            ("ffn_gate", "mlp.gate_proj", (FFN, HIDDEN)),
                            ("ffn_up", "mlp.up_proj", (FFN, HIDDEN)),
                            ("ffn_down", "mlp.down_proj", (HIDDEN, FFN))]:
            out.append((f"blk.{i}.{g}.weight", f"model.layers.{i}.{h}.weight", shape))
        out.append((f"blk.{i}.attn_norm.weight", f"model.layers.{i}.input_layernorm.weight", (HIDDEN,)))
        out.append((f"blk.{i}.ffn_norm.weight", f"model.layers.{i}.post_attention_layernorm.weight", (HIDDEN,)))
    out.append(("output_norm.weight", "model.norm.weight", (HIDDEN,)))
    out.append(("output.weight", "lm_head.weight", (vocab, HIDDEN)))
    return out


def values(shape, rng):
    if len(shape) == 1:
        return (1 + 0.1 * rng.standard_normal(shape)).astype(ml_dtypes.bfloat16)
    rows, cols = shape
    x = rng.standard_t(5, size=shape).astype(np.float32) * 0.02
    x *= np.exp(0.3 * rng.standard_normal((rows, 1))).astype(np.float32)
    big = rng.choice(cols, size=max(1, cols // 512), replace=False)
    x[:, big] *= 8
    return x.astype(ml_dtypes.bfloat16)


def import_gguf(llama):
    """gguf-py from the llama.cpp checkout; what it imports for tokenizers and model
    cards (sentencepiece, yaml) is not needed here and is stubbed when absent."""
    sys.path.insert(0, os.path.join(llama, "gguf-py"))
    for name in ("sentencepiece", "yaml"):
        try:
            __import__(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.SentencePieceProcessor = object
            sys.modules[name] = stub
    import gguf
    from gguf import quants
    return gguf, quants


def write_models(args):
    gguf, _ = import_gguf(args.llama)
    rng = np.random.default_rng(args.seed)
    gguf_path = os.path.join(args.work, "model-bf16.gguf")
    st_path = os.path.join(args.work, "model-bf16.safetensors")
    if os.path.exists(gguf_path) and os.path.exists(st_path):
        return gguf_path, st_path
    w = gguf.GGUFWriter(gguf_path, "llama")
    w.add_context_length(4096)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(args.layers)
    w.add_feed_forward_length(FFN)
    w.add_head_count(32)
    w.add_head_count_kv(32)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(128)
    w.add_vocab_size(args.vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    header, offset, blobs = {}, 0, []
    for gname, hname, shape in model_tensors(args.layers, args.vocab, args.seed):
        x = values(shape, rng)
        raw = x.view(np.uint16)
        w.add_tensor(gname, raw.view(np.uint8).reshape(*shape[:-1], shape[-1] * 2),
                     raw_dtype=gguf.GGMLQuantizationType.BF16)
        header[hname] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + raw.nbytes]}
        offset += raw.nbytes
        blobs.append(raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(st_path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b.tobytes())
    return gguf_path, st_path


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def sqnr_db(x, y):
    x = x.astype(np.float64)
    return 10 * np.log10(np.sum(x * x) / np.sum((x - y.astype(np.float64)) ** 2)), np.sum(x * x), np.sum(
        (x - y.astype(np.float64)) ** 2)


def summarise(per):
    """per: name -> (db, signal, noise) over the weight matrices."""
    signal = sum(v[1] for v in per.values())
    noise = sum(v[2] for v in per.values())
    worst = min(per.items(), key=lambda kv: kv[1][0])
    return {"energy_db": 10 * np.log10(signal / noise), "median_db": statistics.median(v[0] for v in per.values()),
            "worst_db": worst[1][0], "worst": worst[0]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tquant", required=True)
    p.add_argument("--llama", required=True, help="llama.cpp checkout with build/bin/llama-quantize")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--work", default="llm-bench")
    p.add_argument("--extra", default="", help="extra tquant flags, space-separated")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    gguf, quants = import_gguf(args.llama)

    gguf_in, st_in = write_models(args)
    quantize = os.path.join(args.llama, "build", "bin", "llama-quantize")
    gguf_out = os.path.join(args.work, "model-q4km.gguf")
    st_out = os.path.join(args.work, "model-tq.safetensors")
    names = model_tensors(args.layers, args.vocab, args.seed)
    matrices = [(g, h) for g, h, s in names if len(s) == 2 and not g.startswith("token_embd")]

    # llama's bits per weight on the matrices tquant also quantizes (embeddings kept by both
    # recipes' rules differ: llama quantizes token_embd, tquant keeps it; left out of both).
    llama_cmd = [quantize, gguf_in, gguf_out, "Q4_K_M", str(args.threads)]
    t_llama = [timed(llama_cmd)]
    r = gguf.GGUFReader(gguf_out)
    by_name = {t.name: t for t in r.tensors}
    bits = sum(int(by_name[g].n_bytes) * 8 for g, _ in matrices)
    weights = sum(int(np.prod(by_name[g].shape)) for g, _ in matrices)
    budget = bits / weights
    tq_cmd = [args.tquant, st_in, "--budget", f"{budget:.6f}", "-j", str(args.threads), "-q", "-f", "-o", st_out,
              "--json", os.path.join(args.work, "tq.json")] + args.extra.split()
    t_tq = [timed(tq_cmd)]
    for _ in range(args.rounds - 1):
        t_llama.append(timed(llama_cmd))
        t_tq.append(timed(tq_cmd))

    # Quality on the same matrices.
    src = gguf.GGUFReader(gguf_in)
    src_by = {t.name: t for t in src.tensors}
    def original(g):
        t = src_by[g]
        return np.asarray(t.data).view(ml_dtypes.bfloat16).astype(np.float32).reshape(
            [int(d) for d in reversed(t.shape)])
    dq = os.path.join(args.work, "tq-dequant.safetensors")
    subprocess.run([args.tquant, "dequant", st_out, "--dtype", "f32", "-q", "-f", "-o", dq], check=True)
    from safetensors.numpy import load_file
    tq_values = load_file(dq)
    per_llama, per_tq, types = {}, {}, {}
    for g, h in matrices:
        x = original(g)
        t = by_name[g]
        y = quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(x.shape)
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
        per_llama[g] = sqnr_db(x, y)
        per_tq[g] = sqnr_db(x, tq_values[h])
    tq_report = json.load(open(os.path.join(args.work, "tq.json")))
    tq_bpw = tq_report["totals"]["bpw"]
    result = {
        "layers": args.layers, "weights": weights, "threads": args.threads, "rounds": args.rounds,
        "llama_quantize": {"seconds": t_llama, "median_s": statistics.median(t_llama), "bpw": budget,
                           "types": types, **summarise(per_llama)},
        "tquant_budget": {"seconds": t_tq, "median_s": statistics.median(t_tq), "bpw": tq_bpw,
                          **summarise(per_tq)},
    }
    result["time_ratio_tquant_over_llama"] = result["tquant_budget"]["median_s"] / result["llama_quantize"]["median_s"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
