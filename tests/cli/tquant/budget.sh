# --budget lands just below the budget (metadata included), mixes schemes,
# and the written file reports the same bpw; dequant restores every tensor.
"$PY" "$TK_SRC/scripts/bench/make_quant_model.py" m.safetensors --rows 32 --cols 128
tquant m.safetensors --budget 4.25 --candidates kmeans:2,kmeans:3,kmeans:4,int4,int6,int8 \
  -o q.safetensors --json r.json >/dev/null
tquant dequant q.safetensors -o d.safetensors -q
"$PY" - <<'PY'
import json
r = json.load(open("r.json"))
t = r["totals"]
# Eight tensors of a few KiB: the coarsest step between candidates is ~0.05 bpw.
print("within", 4.2 <= t["bpw"] <= 4.25, "schemes", len({x["scheme"] for x in r["tensors"] if x["action"] == "quantize"}) > 1)
from safetensors import safe_open
d, m = safe_open("d.safetensors", "np"), safe_open("m.safetensors", "np")
print(sorted(d.keys()) == sorted(m.keys()))
PY
