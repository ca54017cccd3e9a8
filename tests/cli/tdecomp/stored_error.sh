# The reported error is that of the factors as stored: for an exactly low-rank f64
# tensor with f32 factors, numpy finds the reported error from the stored factors,
# far above the error of the f64 factors. Rounding beyond --tol is a warning.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
tdecomp tucker x.safetensors --ranks 3,3,3 --json t64.json -q -o t64.safetensors
tdecomp tucker x.safetensors --ranks 3,3,3 --factor-dtype f32 --json t.json -q -o t.safetensors
tdecomp cp x.safetensors --rank 3 --factor-dtype f32 --json c.json -q -o c.safetensors
tdecomp tt x.safetensors --max-rank 3 --factor-dtype f32 --json s.json -q -o s.safetensors
"$PY" -c "
import json
import numpy as np
from safetensors.numpy import load_file
x = load_file('x.safetensors')['x']
def parts(path):
    return {k.split('.', 1)[1]: v.astype(np.float64) for k, v in load_file(path).items()}
t, c, s = parts('t.safetensors'), parts('c.safetensors'), parts('s.safetensors')
models = {
    't': np.einsum('abc,ia,jb,kc->ijk', t['tucker.core'], t['tucker.factor.0'], t['tucker.factor.1'], t['tucker.factor.2']),
    'c': np.einsum('r,ir,jr,kr->ijk', c['cp.lambda'], c['cp.factor.0'], c['cp.factor.1'], c['cp.factor.2']),
    's': np.einsum('aib,bjc,ckd->ijk', s['tt.core.0'], s['tt.core.1'], s['tt.core.2']),
}
for name, y in models.items():
    err = np.linalg.norm(x - y) / np.linalg.norm(x)
    rep = json.load(open(name + '.json'))['tensors'][0]['rel_error']
    print(name, 'factors F32, reported == numpy:', abs(rep - err) <= 1e-6 * err, 'above 1e-9:', err > 1e-9)
print('f64 factors report < 1e-12:', json.load(open('t64.json'))['tensors'][0]['rel_error'] < 1e-12)"
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker n.safetensors
tdecomp tucker n.safetensors --tol 1e-3 --factor-dtype bf16 -q -o b.safetensors
