"""Write small bf16 models for the store's CLI cases: base, a fine-tune of every tensor
(each value + N(0, 5e-4), rounded to bf16), a fine-tune of one tensor in ten, and an
unrelated model with the same names and shapes. Usage: store_models.py DIR [TENSORS [VALUES]]"""
import os
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

out = sys.argv[1]
tensors = int(sys.argv[2]) if len(sys.argv) > 2 else 10
values = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
rng = np.random.default_rng(1234)
bf16 = ml_dtypes.bfloat16


def weights():
    return {f"layers.{i}.weight": rng.normal(0, 0.02, (values // 100, 100)).astype(bf16) for i in range(tensors)}


def tuned(model, every):
    return {name: ((w.astype(np.float32) + rng.normal(0, 5e-4, w.shape)).astype(bf16) if i % every == 0 else w)
            for i, (name, w) in enumerate(model.items())}


os.makedirs(out, exist_ok=True)
base = weights()
save_file(base, f"{out}/base.safetensors", metadata={"format": "pt"})
save_file(tuned(base, 1), f"{out}/ft.safetensors", metadata={"format": "pt"})
save_file(tuned(base, 10), f"{out}/ft10.safetensors", metadata={"format": "pt"})
save_file(weights(), f"{out}/other.safetensors", metadata={"format": "pt"})
