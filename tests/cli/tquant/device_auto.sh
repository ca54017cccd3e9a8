# --device auto (the default) takes the CPU where there is no CUDA device, and the JSON
# report says which device quantized each tensor; the text report reads as ever. The
# bytes are those of --device cpu.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'w': np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)}, 'in.safetensors')"
tquant in.safetensors --scheme int4 --device auto --no-provenance -o auto.safetensors --json auto.json >/dev/null
tquant in.safetensors --scheme int4 --device cpu --no-provenance -o cpu.safetensors >/dev/null
cmp auto.safetensors cpu.safetensors || exit 11
"$PY" - <<'PY'
import json
d = json.load(open("auto.json"))
print([t["device"] for t in d["tensors"]])
print(d["weights_by_device"])
PY
