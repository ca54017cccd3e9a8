# dequant of a file that lost a part exits 3 naming it.
tquant "$TD/tiny.safetensors" --scheme kmeans:3 --min-elements 1 --allow-nonfinite -q -o q.safetensors 2>/dev/null >/dev/null
"$PY" -c "
from safetensors import safe_open; from safetensors.numpy import save_file
f = safe_open('q.safetensors', 'np')
save_file({k: f.get_tensor(k) for k in f.keys() if k not in ('lm_head.weight.codebook', 'lm_head.weight', 'layers.0.norm.weight')}, 'bad.safetensors', metadata=f.metadata())" 2>/dev/null || \
"$PY" -c "
import json, struct
raw = open('q.safetensors', 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]; h = json.loads(raw[8:8 + n]); data = raw[8 + n:]
del h['lm_head.weight.codebook']
out, parts = {}, []
off = 0
for k in sorted((k for k in h if k != '__metadata__'), key=lambda k: h[k]['data_offsets'][0]):
    a, b = h[k]['data_offsets']; parts.append(data[a:b]); h[k]['data_offsets'] = [off, off + b - a]; off += b - a
hb = json.dumps(h).encode(); hb += b' ' * (-len(hb) % 8)
open('bad.safetensors', 'wb').write(struct.pack('<Q', len(hb)) + hb + b''.join(parts))"
tquant dequant bad.safetensors -o d.safetensors
