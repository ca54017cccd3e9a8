# A .tns file on standard input, plain and gzip'ed: sniffed by its first bytes and read
# once (the pipe cannot be read again); both give the CP of the file itself.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.tns
gzip -c x.tns > x.tns.gz
cat x.tns | tdecomp cp - --rank 3 --seed 7 --json p.json -q -o p.safetensors
cat x.tns.gz | tdecomp cp - --rank 3 --seed 7 --json g.json -q -o g.safetensors
tdecomp cp x.tns --rank 3 --seed 7 --json f.json -q -o f.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names p.safetensors
"$PY" -c "
import json
p, g, f = (json.load(open(n))['tensors'][0] for n in ('p.json', 'g.json', 'f.json'))
print('fit > 0.9999:', p['fit'] > 0.9999, g['fit'] > 0.9999)
print('same as the file:', p['fit'] == f['fit'], g['fit'] == f['fit'])"
tdecomp reconstruct g.safetensors -q -o y.safetensors
"$PY" -c "
import numpy as np
from safetensors.numpy import load_file
x, y = load_file('x.safetensors')['x'], load_file('y.safetensors')['tensor']
print('rel_error <= 1e-4:', bool(np.linalg.norm(x - y) / np.linalg.norm(x) <= 1e-4))"
