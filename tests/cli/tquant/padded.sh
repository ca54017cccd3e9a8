# Rows not divisible by the group size are padded; the metadata says so and dequant
# restores the original shape.
"$PY" -c "
import numpy as np; from safetensors.numpy import save_file
save_file({'w': np.random.default_rng(0).normal(0, 1, (5, 100)).astype(np.float32)}, 'm.safetensors')"
tquant m.safetensors --scheme kmeans:4 --group-size 32 -o q.safetensors >/dev/null
tquant dequant q.safetensors -o d.safetensors -q
"$PY" -c "
import json; from safetensors import safe_open
q = safe_open('q.safetensors', 'np'); r = json.loads(q.metadata()['tk'])['quant']['tensors']['w']
print(r['params']['padded_cols'], r['params']['group_size'], q.get_tensor('w.codebook').shape)
print(safe_open('d.safetensors', 'np').get_tensor('w').shape)"
