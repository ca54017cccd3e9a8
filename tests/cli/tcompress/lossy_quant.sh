# --lossy quant codes the weight matrices approximately and keeps vectors exact; the
# restored file has the original header and each matrix within its error bound.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(0)
save_file({'w': rng.normal(0, 0.02, (128, 128)).astype(np.float32),
           'b': rng.normal(0, 0.02, (128,)).astype(np.float32)}, 'm.safetensors')"
tcompress -q m.safetensors --lossy quant --bits-per-value 4 -o m.tkz
tcompress -l m.tkz --json - | "$PY" -c "
import json, sys
for r in json.load(sys.stdin)['records']: print(r['name'], r['codec'])"
tcompress -d m.tkz -o back.safetensors
"$PY" -c "
import numpy as np
from safetensors.numpy import load_file
a, b = load_file('m.safetensors'), load_file('back.safetensors')
print('b exact', np.array_equal(a['b'], b['b']))
err = np.linalg.norm(a['w'] - b['w']) / np.linalg.norm(a['w'])
print('w rel error below 0.15', err < 0.15, 'nonzero', err > 0)"
