# --budget to GGUF: the IQ2 and IQ3 candidates wait for a first solve and are estimated
# only on tensors it gives under 5 bpw. On tensors small enough to be measured whole,
# the choices equal --exact-budget's (which estimates every candidate on every tensor)
# at every budget from 2.2 to 6 bpw; -v says on how many tensors they were estimated.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(11)
t = {}
for b in range(3):
    for role, scale in (("attn_q", 1.0), ("attn_v", 0.5), ("ffn_down", 2.0), ("ffn_up", 0.7)):
        x = rng.standard_t(4 + b, size=(64, 512)).astype(np.float32) * 0.02 * scale
        x *= np.exp(0.4 * rng.standard_normal((64, 1))).astype(np.float32)
        t[f"blk.{b}.{role}.weight"] = x
    t[f"blk.{b}.attn_norm.weight"] = np.ones(512, np.float32)
save_file(t, "m.safetensors")
PY
for b in 2.2 2.6 3 3.5 4 4.5 5 6; do
  tquant m.safetensors --budget $b -o m.gguf --dry-run --json d.json -v 2>&1 >/dev/null | grep -o "IQ2 and IQ3 candidates estimated on .* tensors;"
  tquant m.safetensors --budget $b -o m.gguf --dry-run --json e.json --exact-budget -q >/dev/null
  B=$b "$PY" - <<'PY'
import json, os
d, e = (json.load(open(f)) for f in ("d.json", "e.json"))
pick = lambda j: {t["name"]: t.get("scheme") for t in j["tensors"]}
iq = sum(1 for s in pick(d).values() if s and s.startswith(("iq2", "iq3")))
print(f"budget {os.environ['B']}: the same choices as --exact-budget: {pick(d) == pick(e)}; "
      f"IQ2/IQ3 chosen: {iq > 0}; within budget: {d['totals']['bpw'] <= float(os.environ['B'])}")
PY
done
