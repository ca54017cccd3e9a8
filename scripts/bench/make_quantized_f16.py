#!/usr/bin/env python3
"""Seeded weights stored 8-bit quantized at the source, then cast to f16 or f32.

  make_quantized_f16.py OUT.safetensors [--dtype f16|f32] [--scale S] [--model PATH] [--per-tensor]

A conv net's layers (a ResNet-like stack of 3x3 convolutions, batch-norm vectors and a
classifier; about 2.5M weights at --scale 1), each quantized per output channel to 255
symmetric levels (int8 times a per-channel step) and stored as dequantized values, the
way a model exported from an 8-bit checkpoint is shipped. With --model, the 2-D and
larger tensors of that safetensors file are quantized the same way instead (a real
model's value distributions). --per-tensor: one step for a whole tensor (255 values).
"""
import argparse

import numpy as np
from safetensors.numpy import load_file, save_file


def quantize(w, rng_dtype, per_tensor):
    flat = w.reshape(1 if per_tensor else w.shape[0], -1).astype(np.float32)
    step = np.abs(flat).max(axis=1, keepdims=True) / 127
    step[step == 0] = 1
    q = np.clip(np.round(flat / step), -127, 127)
    return (q * step).reshape(w.shape).astype(rng_dtype)


def conv_net(rng, scale):
    layers = {}
    c_in = 3
    for stage, (c, blocks) in enumerate([(32, 2), (64, 2), (128, 2), (256, 2)]):
        c = int(c * scale)
        for b in range(blocks):
            for k in range(2):
                fan_in = c_in * 9
                layers[f"s{stage}.b{b}.conv{k}.weight"] = rng.normal(0, np.sqrt(2 / fan_in), (c, c_in, 3, 3))
                layers[f"s{stage}.b{b}.bn{k}.weight"] = rng.normal(1, 0.1, (c,))
                layers[f"s{stage}.b{b}.bn{k}.bias"] = rng.normal(0, 0.1, (c,))
                c_in = c
    layers["fc.weight"] = rng.normal(0, np.sqrt(1 / c_in), (1000, c_in))
    layers["fc.bias"] = np.zeros(1000)
    return layers


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--dtype", default="f16", choices=["f16", "f32"])
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--model")
    p.add_argument("--per-tensor", action="store_true", help="one step per tensor, not per output channel")
    a = p.parse_args()
    dtype = np.float16 if a.dtype == "f16" else np.float32
    rng = np.random.default_rng(51)
    src = load_file(a.model) if a.model else conv_net(rng, a.scale)
    out = {}
    for name, w in src.items():
        w = np.asarray(w)
        if not np.issubdtype(w.dtype, np.floating):
            out[name] = w
        elif w.ndim >= 2:
            out[name] = quantize(w, dtype, a.per_tensor)
        else:
            out[name] = w.astype(dtype)
    save_file(out, a.out)


if __name__ == "__main__":
    main()
