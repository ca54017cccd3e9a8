# A decomposition that is not smaller than its tensor is not stored: the tensor is kept
# unchanged, with a warning, and the report says "kept"; so is a tensor that a --budget
# does not shrink. reconstruct and tt-round pass kept tensors through bit for bit.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" full f.safetensors
tdecomp tucker f.safetensors --tol 1e-3 --json r.json -q -o d.safetensors 2>warn.txt
cat warn.txt
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names d.safetensors
"$PY" -c "
import json
for t in json.load(open('r.json'))['tensors']:
    print(t['name'], t['stored'], t['bytes_in'], t['bytes_out'], t.get('decomposition_bytes'))"
tdecomp reconstruct d.safetensors --json - -o y.safetensors | "$PY" -c "
import json, sys
for t in json.load(sys.stdin)['tensors']:
    print('reconstruct:', t['name'], t['stored'], t['dtype'], t['shape'])"
tdecomp tt-round d.safetensors --max-rank 2 -q -o t.safetensors
tdecomp tucker f.safetensors -t w --budget 1KiB --json b.json -q -o b.safetensors 2>warn.txt
cat warn.txt
"$PY" -c "
import json
t = json.load(open('b.json'))['tensors'][0]
print(t['name'], t['stored'], t['bytes_out'])
from safetensors.numpy import load_file
w = load_file('f.safetensors')['w']
for path in ('d.safetensors', 'y.safetensors', 't.safetensors', 'b.safetensors'):
    v = load_file(path)['w']
    print(path, 'w bit for bit:', v.dtype == w.dtype and v.tobytes() == w.tobytes())"
