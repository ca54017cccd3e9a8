#!/usr/bin/env python3
"""tquant's compressed-tensors directories of a real model, run by transformers.

all-MiniLM-L6-v2 (.venv/models/all-minilm-l6-v2 from `make deps`) is quantized by
`tquant --format compressed-tensors` under each scheme below (the 37 weight matrices;
embeddings, norms and biases kept by the default rules), and every directory is loaded
by transformers (AutoModel, which decompresses through the compressed-tensors package)
and run on SENTENCES: mean-pooled, L2-normalised embeddings. For each directory: the
bytes of model.safetensors, the bits per weight of the quantized matrices (stored bytes
of their parameters over their values), the cosine similarity of each sentence's
embedding to the original model's (mean and min), and the largest difference from the
same model run with `tquant dequant`'s weights (what says that transformers computes
with tquant's values). The compressed-tensors package's own decompression is checked bit
for bit in tests/interop/test_compressed_tensors_interop.py.

  .venv/bin/python scripts/bench/ct_minilm_transformers.py --tquant build/tquant --work .bench/ct
"""
import argparse
import json
import os
import shutil
import subprocess

import torch
from safetensors import safe_open
from tokenizers import Tokenizer
from transformers import AutoModel

from minilm_sentences import SENTENCES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, ".venv", "models", "all-minilm-l6-v2")
SCHEMES = [
    ["--scheme", "int8", "--granularity", "channel"],
    ["--scheme", "fp8_e4m3", "--granularity", "channel"],
    ["--scheme", "int4", "--group-size", "32"],
    ["--scheme", "int4", "--group-size", "128"],
    ["--scheme", "nvfp4"],
    ["--budget", "5"],
]


def embed(path, ids, mask, dtype=torch.float32):
    model = AutoModel.from_pretrained(path, torch_dtype=dtype).eval()
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
    pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    return torch.nn.functional.normalize(pooled, dim=1)


def quantized_bpw(directory):
    config = json.load(open(os.path.join(directory, "config.json")))["quantization_config"]
    modules = [t for g in config["config_groups"].values() for t in g["targets"]]
    stored = values = 0
    with safe_open(os.path.join(directory, "model.safetensors"), "pt") as f:
        names = set(f.keys())
        for m in modules:
            for k in names:
                if k.startswith(m + ".weight"):
                    t = f.get_tensor(k)
                    stored += t.numel() * t.element_size()
            shape = f.get_tensor(m + ".weight_shape").tolist() if m + ".weight_shape" in names else None
            if shape is None:
                root = f.get_tensor(m + (".weight" if m + ".weight" in names else ".weight_packed"))
                shape = [root.shape[0], root.shape[1] * (2 if root.dtype == torch.uint8 else 1)]
            values += shape[0] * shape[1]
    return 8 * stored / values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tquant", default=os.path.join(ROOT, "build", "tquant"))
    ap.add_argument("--work", default=os.path.join(ROOT, ".bench", "ct"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tokenizer = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    encoded = tokenizer.encode_batch(SENTENCES)
    # tokenizer.json pads every sentence to 128 tokens: the mask says which are real.
    ids = torch.tensor([e.ids for e in encoded])
    mask = torch.tensor([e.attention_mask for e in encoded])
    original = embed(MODEL, ids, mask)

    print("| tquant flags | model.safetensors bytes | bpw (quantized matrices) | cosine to original mean / min "
          "| max abs difference from tquant dequant's weights |")
    print("|---|---|---|---|---|")
    for flags in SCHEMES:
        out = os.path.join(args.work, "-".join(f.strip("-") for f in flags))
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([args.tquant, MODEL, *flags, "--format", "compressed-tensors", "-o", out, "-q"], check=True)
        dense = out + "-dense"
        shutil.rmtree(dense, ignore_errors=True)
        os.makedirs(dense)
        subprocess.run([args.tquant, "dequant", out, "-o", os.path.join(dense, "model.safetensors"), "-q"],
                       check=True)
        shutil.copy(os.path.join(MODEL, "config.json"), dense)
        # compressed-tensors decompresses nvfp4 to bf16 whatever the model's dtype: such a
        # model runs in bf16 (and its reference with it).
        dtype = torch.bfloat16 if "nvfp4" in flags else torch.float32
        quantized, reference = embed(out, ids, mask, dtype), embed(dense, ids, mask, dtype)
        cosine = (quantized * original).sum(1)
        size = os.path.getsize(os.path.join(out, "model.safetensors"))
        print(f"| `{' '.join(flags)}` | {size} | {quantized_bpw(out):.4f} | {cosine.mean():.5f} / {cosine.min():.5f} "
              f"| {(quantized - reference).abs().max():.2e} |")


if __name__ == "__main__":
    main()
