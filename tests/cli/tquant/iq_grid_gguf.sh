# --scheme iq2xxs, iq2xs, iq2s, iq3xxs and iq3s to GGUF: 256-multiple rows are stored as
# IQ2_XXS .. IQ3_S blocks, 384-wide rows fall back to IQ4_NL (llama-quantize's fallback)
# with one notice; tinfo lists the types, and gguf-py's dequantize equals `tquant
# dequant` of the GGUF and of the native file bit for bit.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(7)
save_file({
    "blk.0.ffn_down.weight": (rng.standard_t(4, (16, 1536)) * 0.02).astype(np.float32),
    "blk.0.attn_q.weight": (rng.standard_normal((32, 512)) * 0.05).astype(np.float16),
    "blk.0.attn_out.weight": (rng.standard_normal((16, 384)) * 0.05).astype(np.float32),
    "blk.0.attn_norm.weight": np.ones(512, np.float32),
}, "m.safetensors")
PY
for s in iq2xxs iq2xs iq2s iq3xxs iq3s; do
  echo "== $s"
  tquant m.safetensors --scheme $s --no-provenance -o $s.gguf 2>&1 >/dev/null | grep -o "notice: .*IQ4_NL.*"
  tquant m.safetensors --scheme $s --exclude blk.0.attn_out.weight -o $s.safetensors -q >/dev/null
  tinfo $s.gguf | tail -n +2
  tquant dequant $s.gguf --dtype f32 -o $s-from_gguf.safetensors -q
  tquant dequant $s.safetensors --dtype f32 -o $s-native.safetensors -q
  S=$s "$PY" - <<'PY'
import os
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors.numpy import load_file
s = os.environ["S"]
ours, native = load_file(f"{s}-from_gguf.safetensors"), load_file(f"{s}-native.safetensors")
for t in sorted(GGUFReader(f"{s}.gguf").tensors, key=lambda t: t.name):
    v = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(tuple(int(d) for d in reversed(t.shape)))
    same = np.array_equal(v.view(np.uint32), ours[t.name].view(np.uint32))
    line = f"{t.name} {t.tensor_type.name} gguf-py == tquant dequant: {same}"
    if t.name in native:
        line += f", == native: {np.array_equal(v.view(np.uint32), native[t.name].view(np.uint32))}"
    print(line)
PY
done
