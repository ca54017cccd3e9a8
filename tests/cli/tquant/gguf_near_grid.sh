# Weights near Q4_1's grid but off it (a fine-tune of a model shipped as Q4_1): Q4_1 and
# the candidates that reach the same grid would return the fine-tune's change as their
# error, so the budget leaves them out and says so (docs/QUANT.md, "Near a grid").
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
def near_grid(rows, cols):
    q = rng.integers(0, 16, (rows, cols // 32, 32)).astype(np.float32)
    q[:, :, 0], q[:, :, 1] = 0, 15
    d = (rng.uniform(0.001, 0.004, (rows, cols // 32, 1))).astype(np.float16).astype(np.float32)
    m = (-8 * d - rng.uniform(0, 0.002, (rows, cols // 32, 1))).astype(np.float16).astype(np.float32)
    w = (q * d + m).reshape(rows, cols)
    change = 1e-4 * np.outer(rng.standard_normal(rows), rng.standard_normal(cols))  # rank one, 1/25 of a step
    return (w + change).astype(np.float16)
save_file({"blk.0.ffn_up.weight": near_grid(64, 576), "blk.0.attn_q.weight": near_grid(64, 576)}, "m.safetensors")
PY
tquant m.safetensors --budget 5 --no-provenance -v -o q.gguf 2>&1 | grep -E 'left out' | sed 's/^tquant: //'
tinfo q.gguf | awk '$1 ~ /^blk/ {print $1, $6}'
