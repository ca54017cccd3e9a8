# RESCAL's R is stored as [r, r, m]: R[:, :, k] pairs with the slice X[:, :, k] ~
# A R[:, :, k] A^T, and numpy rebuilds the slices to the reported error. A file in the
# older layout (R as [m, r, r], no "r_layout" in the metadata) rebuilds the same.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" rescal r.safetensors
tdecomp rescal r.safetensors --rank 3 --seed 1 --factor-dtype f32 --json j.json -q -o d.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names d.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" meta d.safetensors rel r_layout
"$PY" -c "
import json
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file
x = load_file('r.safetensors')['rel']
with safe_open('d.safetensors', 'np') as f:
    meta = f.metadata()
    a, r = f.get_tensor('rel.rescal.A'), f.get_tensor('rel.rescal.R')
y = np.stack([a.astype(np.float64) @ r[:, :, k].astype(np.float64) @ a.T.astype(np.float64) for k in range(x.shape[2])], axis=2)
err = np.linalg.norm(x - y) / np.linalg.norm(x)
rep = json.load(open('j.json'))['tensors'][0]['rel_error']
print('slices rebuilt to the reported error:', abs(rep - err) <= 1e-6 * err, 'rel_error <= 1e-3:', err <= 1e-3)
tk = json.loads(meta['tk'])
del tk['decomp']['rel']['r_layout']
meta['tk'] = json.dumps(tk)
save_file({'rel.rescal.A': a, 'rel.rescal.R': np.ascontiguousarray(r.transpose(2, 0, 1))}, 'old.safetensors', metadata=meta)"
tdecomp reconstruct d.safetensors -q -o y.safetensors
tdecomp reconstruct old.safetensors -q -o z.safetensors
"$PY" -c "
from safetensors.numpy import load_file
y, z = load_file('y.safetensors')['rel'], load_file('z.safetensors')['rel']
print('older layout rebuilds the same:', y.tobytes() == z.tobytes())"
