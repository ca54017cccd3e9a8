# The library states what a format cannot hold; tconvert adds the flag that changes it
# (src/cli/option_hint.h).
"$PY" -c "
import json, struct
import numpy as np
from safetensors.numpy import save_file
h = json.dumps({'a': {'dtype': 'F8_E4M3', 'shape': [4], 'data_offsets': [0, 4]}}).encode()
open('fp8.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + bytes([0x38, 0x40, 0xb8, 0x00]))
save_file({'x' * 80: np.ones((4, 4), np.float32)}, 'long.safetensors')
save_file({'a': np.ones((4, 4), np.float32), 'b': np.zeros((4, 4), np.float32)}, 'two.safetensors')"
tconvert long.safetensors -o b.gguf 2>&1; echo "rc=$?"
tconvert fp8.safetensors -o d.npy 2>&1; echo "rc=$?"
tconvert fp8.safetensors -o e.npz 2>&1; echo "rc=$?"
tconvert -q two.safetensors --max-shard-size 100B -o s/model.safetensors; echo "rc=$?"
tconvert two.safetensors --max-shard-size 100B -o s/model.safetensors 2>&1; echo "rc=$?"
ls
