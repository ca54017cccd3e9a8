# The same data as a 1-based .tns and as a dense tensor: sparse and dense CP agree.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.tns
tdecomp cp x.tns --rank 3 --json s.json -q -o s.safetensors
tdecomp cp x.safetensors --rank 3 --json d.json -q -o d.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names s.safetensors
"$PY" -c "
import json
s, d = (json.load(open(p))['tensors'][0] for p in ('s.json', 'd.json'))
print('fit > 0.9999:', s['fit'] > 0.9999, d['fit'] > 0.9999)
print('agree:', abs(s['fit'] - d['fit']) < 1e-6)"
tdecomp reconstruct s.safetensors -q -o y.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error x.safetensors y.safetensors x 1e-4
