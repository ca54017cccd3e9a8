# Options mean one thing each: --outliers takes a percentage with its sign; --size is the
# output file's size, units as written; unmatched --importance entries are counted; JSON
# numbers are numbers (null for an exact tensor); -t leaves other tensors out, as in
# tconvert; dequant --dtype casts every float tensor and --json reports.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(5)
save_file({"a.weight": (rng.standard_normal((64, 256)) * 0.05).astype(np.float32),
           "b.weight": (rng.standard_normal((64, 256)) * 0.05).astype(np.float32),
           "zero.weight": np.zeros((64, 256), np.float32),
           "a.bias": rng.standard_normal(256).astype(np.float32)}, "m.safetensors")
save_file({"a.weight": np.ones(256, np.float32), "typo.weight": np.ones(256, np.float32)}, "imp.safetensors")
PY
tquant m.safetensors --scheme kmeans:3 --outliers 0.1 -o x.safetensors 2>&1 | head -1; echo "bare share: $?"
tquant m.safetensors --scheme kmeans:3 --outliers 0.1% --dry-run -q >/dev/null; echo "percentage: $?"
tquant m.safetensors --budget 4 --importance imp.safetensors --dry-run -q 2>&1 >/dev/null | grep -o "1 of 2 --importance entries match no tensor of the input (e.g. 'typo.weight')"
tquant m.safetensors --size 30KB -o s.safetensors -q >/dev/null
"$PY" -c "import os; n = os.path.getsize('s.safetensors'); print('30KB is the file:', n <= 30000, n > 30000 * 0.8)"
tquant m.safetensors --scheme int4 -o q.safetensors --json q.json -q >/dev/null
"$PY" - <<'PY'
import json
d = json.load(open("q.json"))
zero = [t for t in d["tensors"] if t["name"] == "zero.weight"][0]
print("exact sqnr is null:", zero["sqnr_db"] is None)
print("totals are numbers:", all(isinstance(v, (int, float)) or v is None for k, v in d["totals"].items() if k != "worst_tensor"))
PY
tquant m.safetensors -t 'a.*' --scheme int4 -o t.safetensors -q >/dev/null
"$PY" -c "from safetensors import safe_open; print('-t keeps:', sorted(safe_open('t.safetensors', 'np').keys()))"
tquant dequant q.safetensors --dtype bf16 -o d.safetensors --json dq.json -q
"$PY" - <<'PY'
import json
from safetensors import safe_open
f = safe_open("d.safetensors", "np")
print("dtypes:", sorted({f.get_slice(k).get_dtype() for k in f.keys()}))
d = json.load(open("dq.json"))
print("dequant json:", d["totals"], sorted((t["name"], t["action"]) for t in d["tensors"]))
PY
