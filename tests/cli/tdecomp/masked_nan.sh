# NaN entries are refused unless masked; masked, they are fitted and ignored by the error.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" cp x.safetensors
"$PY" -c "
import numpy as np
from safetensors.numpy import load_file, save_file
x = load_file('x.safetensors')['x']
rng = np.random.default_rng(1)
m = (rng.uniform(size=x.shape) > 0.3).astype(np.uint8)
x = x.copy(); x[m == 0] = np.nan
save_file({'x': x}, 'holes.safetensors'); save_file({'x': m}, 'mask.safetensors')"
tdecomp cp holes.safetensors --rank 3 -q -o d.safetensors; echo "unmasked: exit $?"
tdecomp cp holes.safetensors --rank 3 --mask mask.safetensors --json - -o d.safetensors | "$PY" -c "
import json, sys
print('masked fit > 0.999:', json.load(sys.stdin)['tensors'][0]['fit'] > 0.999)"
