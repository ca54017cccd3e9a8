# Write a small safetensors model for the tcompress cases: model.py OUT [SEED] [CHANGE]
# Float tensors look like trained weights (N(0, 0.02)); CHANGE > 0 perturbs every float
# tensor except "embed" by N(0, CHANGE), as a fine-tune of the same seed would.
import sys

import numpy as np
from safetensors.numpy import save_file

out = sys.argv[1]
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
change = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
rng = np.random.default_rng(seed)
t = {
    "embed": rng.normal(0, 0.02, (64, 48)).astype(np.float16),
    "layer.0.w": rng.normal(0, 0.02, (48, 48)).astype(np.float32),
    "layer.0.b": rng.normal(0, 0.02, (47,)).astype(np.float64),
    "ids": rng.integers(-1000, 1000, (13,)).astype(np.int64),
    "mask": rng.integers(0, 2, (7, 3)).astype(np.bool_),
    "bytes": rng.integers(0, 255, (11,)).astype(np.uint8),
    "empty": np.zeros((0, 4), np.float32),
}
drng = np.random.default_rng(seed + 1000)
for k in ("layer.0.w", "layer.0.b"):
    if change > 0:
        t[k] = (t[k] + drng.normal(0, change, t[k].shape)).astype(t[k].dtype)
save_file(t, out, metadata={"source": "tcompress test"})
