# BitX: against its base, a fine-tune's unchanged tensors become references and its
# changed ones XOR deltas where a delta is smaller than the tensor coded alone (the
# 47-value f64 bias is stored raw); the restore needs the base and is byte-identical.
M="$TK_SRC/tests/cli/tcompress/model.py"
"$PY" "$M" base.safetensors 1
"$PY" "$M" tune.safetensors 1 0.001
tcompress tune.safetensors --base base.safetensors -o tune.tkz
tcompress -l tune.tkz --json - | "$PY" -c "
import json, sys
for r in json.load(sys.stdin)['records']: print(r['name'], r['codec'])"
tcompress -q -d --base base.safetensors tune.tkz -o back.safetensors && cmp back.safetensors tune.safetensors && echo identical
# One delta tensor, extracted with the base.
tcompress -q -d --base base.safetensors -t layer.0.w tune.tkz -o w.npy
"$PY" -c "
import numpy as np
from safetensors.numpy import load_file
print('layer.0.w', np.array_equal(np.load('w.npy'), load_file('tune.safetensors')['layer.0.w']))"
