#!/usr/bin/env python3
"""Write a seeded synthetic model whose weight matrices have varied distributions
(Gaussian, heavy-tailed Student-t, Laplace, outlier columns, uniform, mixed scales),
plus a norm vector and an integer tensor: the kind of model where one scheme per
tensor should beat a single scheme for all.

usage: make_quant_model.py OUT.safetensors [--rows R] [--cols C] [--seed S] [--blocks N]

--blocks N repeats the set of weight matrices N times (blocks.K. prefixes, shapes
and scales varied per block), a model with as many tensors as a small transformer.
"""
import argparse

import numpy as np
from safetensors.numpy import save_file


def weights(rng, r, c):
    t = {}
    t["layers.0.gauss.weight"] = rng.normal(0, 0.02, (r, c))
    t["layers.0.student_t.weight"] = rng.standard_t(3, (r, c)) * 0.02
    t["layers.0.laplace.weight"] = rng.laplace(0, 0.05, (r, c))
    w = rng.normal(0, 0.01, (r, c))
    w[:, rng.choice(c, max(1, c // 64), replace=False)] *= 20
    t["layers.1.outlier_cols.weight"] = w
    t["layers.1.uniform.weight"] = rng.uniform(-0.1, 0.1, (r // 2, c // 2 + 7))
    t["layers.1.small_scale.weight"] = rng.normal(0, 1e-3, (r, c)) * rng.uniform(0.1, 3, (r, 1))
    t["layers.1.big.weight"] = rng.normal(0, 0.05, (2 * r, c)) * np.exp(rng.normal(0, 1, (1, c)))
    t["layers.0.norm.weight"] = 1 + rng.normal(0, 0.1, c)
    return t


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--cols", type=int, default=256)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--blocks", type=int, default=1)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    t = {}
    for b in range(a.blocks):
        prefix = f"blocks.{b}." if a.blocks > 1 else ""
        # Vary the shapes per block so that tensor sizes (and so the budget's steps) differ.
        r = a.rows + (rng.integers(0, a.rows // 2) // 32) * 32 if b else a.rows
        c = a.cols
        for k, v in weights(rng, r, c).items():
            t[prefix + k] = v
    out = {k: v.astype(np.float32) for k, v in t.items()}
    out["layers.1.gauss_f16.weight"] = rng.normal(0, 0.02, (r, c)).astype(np.float16)
    out["position_ids"] = np.arange(16, dtype=np.int64)
    save_file(out, a.out, metadata={"format": "pt"})


if __name__ == "__main__":
    main()
