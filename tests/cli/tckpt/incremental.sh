# Incremental steps store only what changed and refer to their full parent; retention
# keeps every step a kept step takes bytes from: step 2 refers to step 1 for w3 and to
# its parent, step 0, for the rest.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(1)
state = {f"w{i}": rng.standard_normal(4096).astype(np.float32) for i in range(10)}
save_file(state, "s1.safetensors")
state["w3"] = state["w3"].copy(); state["w3"][5] += 1
save_file(state, "s2.safetensors")
state["w7"] = rng.standard_normal(4096).astype(np.float32)
save_file(state, "s3.safetensors")
PY
tckpt save ck --incremental s1.safetensors -q
tckpt save ck --incremental s2.safetensors
tckpt save ck --incremental --keep-last 1 s3.safetensors -q
tckpt ls ck | awk '{print $1, $(NF-1), $NF}'
tckpt restore ck -o out.safetensors -q && cmp out.safetensors s3.safetensors && echo "step 2 identical"
tckpt verify ck -q >/dev/null && echo verified
