#!/usr/bin/env python3
"""Write testdata/tiny.safetensors: a few KB model fixture with tensors of mixed dtypes
(F32, F16, BF16, I64), a few special values (zeros, NaN, +-Inf) and metadata, written by
the reference safetensors package (metadata keys sorted; run from anywhere; rerunning reproduces the same
bytes).
"""
import json
import os

import ml_dtypes
import numpy as np
from safetensors import deserialize
from safetensors.numpy import save

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "tiny.safetensors")


def main():
    rng = np.random.default_rng(1234)
    embed = rng.standard_normal((16, 8)).astype(np.float32)
    embed[0, :4] = 0.0
    attn = (rng.standard_normal((8, 8)) * 0.5).astype(np.float16)
    norm = np.linspace(0.5, 1.5, 8, dtype=np.float32).astype(ml_dtypes.bfloat16)
    head = (rng.standard_normal((16, 8)) * 0.1).astype(ml_dtypes.bfloat16)
    special = np.array([0.0, -1.5, np.nan, np.inf, -np.inf, 2.25], dtype=np.float32)
    positions = np.arange(16, dtype=np.int64)
    tensors = {
        "embed.weight": embed,
        "layers.0.attn.weight": attn,
        "layers.0.norm.weight": norm,
        "lm_head.weight": head,
        "position_ids": positions,
        "special": special,
    }
    metadata = {
        "format": "pt",
        "description": "tensorkit tiny test model",
        "config": json.dumps({"hidden": 8, "vocab": 16, "layers": [0]}),
    }
    data = canonical_metadata_order(save(tensors, metadata=metadata))
    for name, view in deserialize(data):
        assert bytes(view["data"]) == tensors[name].tobytes(), name
    with open(OUT, "wb") as f:
        f.write(data)


def canonical_metadata_order(data):
    """The reference writer emits __metadata__ in hash order, which changes from run to
    run; rewrite the header with the metadata keys sorted (tensor entries, offsets and
    data untouched) so the fixture is reproducible."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__")
    ordered = {"__metadata__": dict(sorted(meta.items()))}
    ordered.update(header)
    text = json.dumps(ordered, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + n :]


if __name__ == "__main__":
    main()
