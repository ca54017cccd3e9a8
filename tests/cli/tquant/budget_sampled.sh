# --budget on tensors large enough to sample (views of >= 128 rows): the errors are
# estimated on samples of rows, decided ones kept, the rest measured again; the result
# lands within the budget, within 0.1 dB of the allocation that measures every candidate
# on every row (--exact-budget), and the summary says how the estimates were used.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
t = {}
for i in range(6):
    x = rng.standard_t(5, size=(512, 256)).astype(np.float32) * 0.02
    x *= np.exp(0.3 * rng.standard_normal((512, 1))).astype(np.float32) * (1 + i)
    t[f"layers.{i}.weight"] = x
save_file(t, "m.safetensors")
PY
tquant m.safetensors --budget 4.5 --candidates q3k,int4,nf4,q4k,kmeans:4,q5k,q6k --dry-run --json s.json 2>err >/dev/null
grep -o "budget: [0-9]* candidate errors estimated on samples of rows" err | sed 's/[0-9][0-9]* candidate/N candidate/'
tquant m.safetensors --budget 4.5 --candidates q3k,int4,nf4,q4k,kmeans:4,q5k,q6k --exact-budget --dry-run --json e.json -q >/dev/null
"$PY" - <<'PY'
import json
s, e = json.load(open("s.json"))["totals"], json.load(open("e.json"))["totals"]
print("within budget:", s["bpw"] <= 4.5, e["bpw"] <= 4.5)
print("sampled within 0.1 dB of exact:", abs(s["sqnr_db"] - e["sqnr_db"]) < 0.1)
PY
