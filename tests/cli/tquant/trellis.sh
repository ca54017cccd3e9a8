# trellis:2:8 through the tool: quantize, dequant within the 2-bit trellis error, and as a
# --budget candidate it is chosen where it beats q2k per bit.
"$PY" "$TK_SRC/scripts/bench/make_quant_model.py" m.safetensors --rows 128 --cols 1024
tquant m.safetensors --scheme trellis:2:8 -q -o q.safetensors >/dev/null
tquant dequant q.safetensors -o d.safetensors -q
tquant m.safetensors --budget 2.5 --candidates trellis:2:8,q2k,int4 -o b.safetensors --json r.json >/dev/null
"$PY" - <<'PY'
import json
import numpy as np
from safetensors import safe_open
q = safe_open("q.safetensors", "np")
rec = json.loads(q.metadata()["tk"])["quant"]["tensors"]["layers.0.gauss.weight"]
print(rec["scheme"], rec["params"]["state_bits"], sorted(rec["parts"]))
m, d = safe_open("m.safetensors", "np"), safe_open("d.safetensors", "np")
x = m.get_tensor("layers.0.gauss.weight").astype(np.float64)
y = d.get_tensor("layers.0.gauss.weight").astype(np.float64)
print("sqnr above 10.4 dB", 10 * np.log10((x * x).sum() / ((x - y) ** 2).sum()) > 10.4)
r = json.load(open("r.json"))
print("within", r["totals"]["bpw"] <= 2.5, "trellis chosen", any(t.get("scheme") == "trellis:2:8" for t in r["tensors"]))
PY
