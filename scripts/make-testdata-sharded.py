#!/usr/bin/env python3
"""Write the tiny sharded model in testdata/sharded/ and the malformed .npy and shard
index fixtures in testdata/malformed/ (run from anywhere; rerunning reproduces the same
bytes).

testdata/sharded/ is a two-shard safetensors model laid out as Hugging Face writes
them: model-0000K-of-00002.safetensors plus model.safetensors.index.json.
"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata")


def sharded():
    out = os.path.join(ROOT, "sharded")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20240611)
    shards = {
        "model-00001-of-00002.safetensors": {
            "model.embed_tokens.weight": rng.standard_normal((16, 8)).astype(np.float32),
            "model.layers.0.mlp.weight": rng.standard_normal((8, 8)).astype(np.float16),
            "model.layers.0.norm.weight": np.ones(8, dtype=np.float32),
        },
        "model-00002-of-00002.safetensors": {
            "model.layers.1.mlp.weight": rng.standard_normal((8, 8)).astype(np.float16),
            "model.norm.weight": np.full(8, 0.5, dtype=np.float32),
            "lm_head.weight": rng.standard_normal((16, 8)).astype(np.float32),
            "step": np.array(1234, dtype=np.int64),
        },
    }
    weight_map = {}
    total = 0
    for file, tensors in shards.items():
        save_file(tensors, os.path.join(out, file), metadata={"format": "pt"})
        for name, array in tensors.items():
            weight_map[name] = file
            total += array.nbytes
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


def npy_file(header, data=b"", version=(1, 0)):
    """A .npy file with the given dict text, padded as NumPy pads it."""
    text = header.encode("latin1")
    prefix_len = 10 if version == (1, 0) else 12
    pad = 64 - (prefix_len + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    size = len(text).to_bytes(2 if version == (1, 0) else 4, "little")
    return b"\x93NUMPY" + bytes(version) + size + text + data


def malformed():
    out = os.path.join(ROOT, "malformed")
    os.makedirs(out, exist_ok=True)
    f4 = np.arange(6, dtype="<f4").tobytes()
    files = {
        # Each file breaks one rule; the unit tests name the exact error.
        "npy-bad-magic.npy": b"\x93NUMPZ\x01\x00" + npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f4)[8:],
        "npy-bad-version.npy": npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f4, (4, 0)),
        "npy-c16.npy": npy_file("{'descr': '<c16', 'fortran_order': False, 'shape': (0,), }"),
        "npy-structured.npy": npy_file("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (0,), }"),
        "npy-missing-shape.npy": npy_file("{'descr': '<f4', 'fortran_order': False, }", f4),
        "npy-negative-dim.npy": npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", f4),
        "npy-not-tuple.npy": npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", f4),
        "npy-truncated-data.npy": npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f4[:-1]),
        "npy-trailing-bytes.npy": npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f4 + b"\0"),
        "npy-huge-shape.npy": npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"),
        "index-traversal.index.json": json.dumps({"weight_map": {"w": "../sharded/model-00001-of-00002.safetensors"}}),
        "index-no-weight-map.index.json": json.dumps({"metadata": {"total_size": 0}}),
        "index-missing-shard.index.json": json.dumps({"weight_map": {"w": "absent.safetensors"}}),
    }
    for name, content in files.items():
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(os.path.join(out, name), mode) as f:
            f.write(content)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: make-testdata-sharded.py")
    sharded()
    malformed()
