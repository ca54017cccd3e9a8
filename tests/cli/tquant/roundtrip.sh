# kmeans round trip on the tiny model: parts and metadata in the file, dequant restores
# names, dtypes and shapes, errors within the 3-bit bound; untouched tensors are identical.
tquant "$TD/tiny.safetensors" --scheme kmeans:3 --min-elements 1 --allow-nonfinite -q -o q.safetensors >/dev/null
tquant dequant q.safetensors -o d.safetensors
"$PY" - <<'PY'
import json
import numpy as np
from safetensors import safe_open
q = safe_open("q.safetensors", "np")
meta = json.loads(q.metadata()["tk"])["quant"]
print(meta["version"], sorted(meta["tensors"]))
print(sorted(k for k in q.keys() if k.startswith("lm_head")))
PY
"$PY" - <<'PY'
import ml_dtypes, numpy as np, json, struct
def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        dt = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16, "I64": np.int64, "U8": np.uint8}[v["dtype"]]
        a, b = v["data_offsets"]
        out[k] = (v["dtype"], np.frombuffer(data[a:b], dt).reshape(v["shape"]))
    return out
src, dq = load("$TD/tiny.safetensors".replace("$TD", __import__("os").environ["TD"])), load("d.safetensors")
print(sorted(dq) == sorted(src))
for k in sorted(src):
    (dt, x), (dt2, y) = src[k], dq[k]
    same = dt == dt2 and x.shape == y.shape
    if k in ("lm_head.weight", "layers.0.attn.weight"):
        x, y = x.astype(np.float64), y.astype(np.float64)
        rel = np.linalg.norm(x - y) / np.linalg.norm(x)
        print(k, dt2, same, rel < 0.25)
    else:
        print(k, dt2, same, x.tobytes() == y.tobytes())
PY
