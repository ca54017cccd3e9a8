# Real layouts, generated (no weights shipped): HF, TF/Keras, JAX/Flax and PyTorch names;
# HWIO, OIHW and depthwise kernels, [n, 1] and [1, n] matrices, 1-D tensors, scalars
# and odd shapes. For every scheme a single-scheme run quantizes the expected tensors,
# keeps the expected ones, and stays within the scheme's nominal bits per weight (the
# rate on a [256, 4096] tensor) plus at most 1/16 for one partial block of padding,
# plus the tensor's per-tensor codebooks (and vq's per-row RMS scales: metadata of
# its rows, as a codebook is of its tensor).
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(0)
def w(*shape, dtype=np.float32):
    return (rng.standard_normal(shape) * 0.05).astype(dtype)
t = {
    # HF / PyTorch
    "bert.embeddings.word_embeddings.weight": w(1000, 64),
    "bert.encoder.layer.0.attention.self.query.weight": w(256, 256),
    "bert.encoder.layer.0.attention.self.query.bias": w(256),
    "bert.encoder.layer.0.attention.output.LayerNorm.weight": w(256),
    "lm_head.weight": w(1000, 64, dtype=np.float16),
    "features.0.weight": w(64, 32, 3, 3),
    "features.1.running_mean": w(64),
    # TF / Keras
    "conv1/kernel:0": w(3, 3, 3, 32),
    "conv2/kernel:0": w(3, 3, 32, 64),
    "conv2/bias:0": w(64),
    "dw/depthwise_kernel:0": w(3, 3, 512, 1),
    "bn/gamma:0": w(64), "bn/beta:0": w(64), "bn/moving_mean:0": w(64), "bn/moving_variance:0": w(64),
    "dense/kernel:0": w(1024, 10),
    "dense/biases": w(10),
    "logits/kernel:0": w(8192, 1),
    "global_step": np.array(1000, np.int64),
    "Const": np.array(0.5, np.float32),
    "BoxPredictor/anchors": w(1917, 4),
    # JAX / Flax
    "params/Dense_0/kernel": w(64, 128),
    "params/Dense_0/bias": w(128),
    "params/LayerNorm_0/scale": w(128),
    "params/Conv_0/kernel": w(1, 8192),
    "params/norm_big": w(64, 128),
    # odd shapes
    "odd": w(7, 13, 61),
    "one": w(1, 1),
}
save_file(t, "model.safetensors")
save_file({"w": w(256, 4096)}, "nominal.safetensors")
PY
expected="bert.encoder.layer.0.attention.self.query.weight conv2/kernel:0 dense/kernel:0 dw/depthwise_kernel:0 features.0.weight lm_head.weight logits/kernel:0 odd params/Conv_0/kernel params/Dense_0/kernel"
for scheme in int2 int4 int8 q2k q3k q4k q6k q8k nf4 iq4xs fp8_e4m3 mxfp4 mxfp6_e2m3 mxfp8_e4m3 nvfp4 kmeans:3 vq:4:8 trellis:2:8; do
  tquant nominal.safetensors --scheme "$scheme" --dry-run --json nominal.json -q >/dev/null
  tquant model.safetensors --scheme "$scheme" -f -o q.safetensors --json q.json -q >/dev/null || echo "$scheme: exit $?"
  "$PY" - "$scheme" "$expected" <<'PY'
import json, sys
from safetensors import safe_open
scheme, expected = sys.argv[1], sorted(sys.argv[2].split())
nominal = json.load(open("nominal.json"))["tensors"][0]["bpw"]
report = json.load(open("q.json"))
quantized = sorted(t["name"] for t in report["tensors"] if t["action"] == "quantize")
if quantized != expected:
    print(scheme, "quantized", quantized)
f = safe_open("q.safetensors", "np")
def nbytes(name):
    s = f.get_slice(name)
    n = 1
    for d in s.get_shape():
        n *= d
    bits = {"U8": 8, "I8": 8, "F16": 16, "BF16": 16, "F32": 32, "U16": 16, "I16": 16, "I32": 32, "F8_E4M3": 8,
            "F8_E5M2": 8, "F8_E8M0": 8, "F6_E2M3": 6, "F6_E3M2": 6, "F4": 4}[s.get_dtype()]
    return n * bits // 8
for t in report["tensors"]:
    if t["action"] != "quantize":
        continue
    parts = [k for k in f.keys() if k.startswith(t["name"] + ".")]
    stored = sum(nbytes(k) for k in parts)
    n = 1
    for d in t["shape"]:
        n *= d
    fixed = sum(nbytes(k) for k in parts if "codebook" in k or (scheme.startswith("vq") and k.endswith(".scales")))
    bound = nominal * (1 + 1 / 16) + 8 * fixed / n
    if stored != t["bytes"] or t["bpw"] > bound + 1e-9:
        print(scheme, t["name"], t["shape"], "bpw", round(t["bpw"], 4), "bound", round(bound, 4), stored, t["bytes"])
print(scheme, "ok")
PY
done
# A --rule does not override the kind rules silently.
tquant model.safetensors --scheme q4k --rule '*bias*=int8' -o r.safetensors 2>&1 >/dev/null | grep -o "rule '\*bias\*=int8' matched [0-9]* tensors kept by the default rules"
