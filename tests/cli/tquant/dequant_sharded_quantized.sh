# A model quantized shard by shard (scripts/slurm/array_compress.sbatch quant) and
# indexed as array_merge.sbatch does: dequant of the index restores the quantized
# tensors of every shard, not only the first shard's (each shard records its own).
mkdir -p q
for s in "$TD"/sharded/*-of-*.safetensors; do
  tquant "$s" --scheme int8 --no-default-keep --min-elements 1 -q -o "q/$(basename "$s")" >/dev/null
done
"$PY" - <<'PY'
import json, os
from safetensors import safe_open
weight_map = {}
for f in sorted(os.listdir("q")):
    with safe_open(os.path.join("q", f), "np") as st:
        weight_map.update({k: f for k in st.keys()})
json.dump({"metadata": {}, "weight_map": weight_map}, open("q/model.safetensors.index.json", "w"))
PY
tquant dequant q/model.safetensors.index.json -o d.safetensors 2>&1
"$PY" - "$TD/sharded" <<'PY'
import sys
import numpy as np
from safetensors import safe_open
ref = {}
import glob
for f in sorted(glob.glob(sys.argv[1] + "/*-of-*.safetensors")):
    with safe_open(f, "np") as st:
        ref.update({k: st.get_tensor(k) for k in st.keys()})
with safe_open("d.safetensors", "np") as st:
    got = {k: st.get_tensor(k) for k in st.keys()}
print(sorted(got) == sorted(ref))
for k in sorted(ref):
    same = got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape
    print(k, same, bool(np.abs(got[k].astype(np.float32) - ref[k].astype(np.float32)).max() <= 0.02 * max(1e-6, np.abs(ref[k].astype(np.float32)).max())) if same and ref[k].dtype.kind == "f" else same)
PY
