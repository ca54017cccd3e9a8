# A tensor no view fills exactly: [5, 100] under groups of 32 is quantized as one row of
# 500 values (view_cols), padded to 512; the metadata says so and dequant restores the
# original shape.
"$PY" -c "
import numpy as np; from safetensors.numpy import save_file
save_file({'w': np.random.default_rng(0).normal(0, 1, (5, 100)).astype(np.float32)}, 'm.safetensors')"
tquant m.safetensors --scheme kmeans:4 --group-size 32 --min-elements 1 -o q.safetensors >/dev/null
tquant dequant q.safetensors -o d.safetensors -q
"$PY" -c "
import json; from safetensors import safe_open
q = safe_open('q.safetensors', 'np'); r = json.loads(q.metadata()['tk'])['quant']['tensors']['w']
print(r['params']['padded_cols'], r['params']['group_size'], r['params']['view_cols'], q.get_tensor('w.codebook').shape)
print(safe_open('d.safetensors', 'np').get_tensor('w').shape)"
