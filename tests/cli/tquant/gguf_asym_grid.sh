# Weights that sit on Q4_1's grid (a model shipped as Q4_1, cast to f16): a GGUF --budget
# weighs Q4_1 and Q5_1 beside Q4_0 and Q5_0 and takes Q4_1 (above 60 dB here, where Q4_0
# and Q5_0 give 26 and 32); "+asym" candidates are GGUF's alone. As ggml writes Q4_1,
# each block's minimum is its lowest level and its maximum its highest.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
def on_grid(rows, cols):
    q = rng.integers(0, 16, (rows, cols // 32, 32)).astype(np.float32)
    q[:, :, 0], q[:, :, 1] = 0, 15
    d = (rng.uniform(0.001, 0.004, (rows, cols // 32, 1))).astype(np.float16).astype(np.float32)
    m = (-8 * d - rng.uniform(0, 0.002, (rows, cols // 32, 1))).astype(np.float16).astype(np.float32)
    return (q * d + m).reshape(rows, cols).astype(np.float16)
save_file({"blk.0.ffn_up.weight": on_grid(64, 576), "blk.0.attn_q.weight": on_grid(64, 576)}, "m.safetensors")
PY
tquant m.safetensors --budget 5 --no-provenance -o q.gguf 2>&1 | grep -o "SQNR dB: median [0-9]*" | awk '{print ($4 > 35) ? "above 35 dB" : "not on the grid: " $0}'
tinfo q.gguf | awk '$1 ~ /^blk/ {print $1, $6}'
tquant m.safetensors --budget 5 --candidates int4,int5,int4+asym -o x.safetensors 2>&1 | sed 's/^tquant: //'; echo "rc=${PIPESTATUS[0]}"
