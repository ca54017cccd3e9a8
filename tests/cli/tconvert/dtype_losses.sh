# A cast that loses values says how many and what to use instead: float -> int8 rounds
# and clamps (tquant quantizes with scales), and f8 overflow becomes NaN unless --saturate.
# The JSON report gives the counts per tensor.
$PY -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'w': np.array([0.4, 1.5, -2.0, 300.0, -1e4, np.nan, 460.0, 1e6], np.float32),
           'n': np.arange(4, dtype=np.int32)}, 'in.safetensors')"
tconvert -q --dtype int8 in.safetensors -o i8.safetensors 2>&1
tconvert -q --dtype f8_e4m3 in.safetensors -o f8.safetensors --json - 2>&1 | $PY -c "
import json, sys
text = sys.stdin.read()
print(text[:text.index('{')].strip())
d = json.loads(text[text.index('{'):])
print({t['name']: t.get('overflowed') for t in d['tensors']})"
tconvert -q --dtype f8_e4m3 --saturate in.safetensors -o sat.safetensors 2>&1
echo "saturated: no warning"
tconvert -q --dtype f16 in.safetensors -o f16.safetensors 2>&1
