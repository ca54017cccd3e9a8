# dequant of a file whose metadata contradicts its parts exits 3.
tquant "$TD/tiny.safetensors" --scheme kmeans:3 --min-elements 1 --allow-nonfinite -q -o q.safetensors 2>/dev/null >/dev/null
"$PY" -c "
import json, struct
raw = open('q.safetensors', 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]; h = json.loads(raw[8:8 + n])
tk = json.loads(h['__metadata__']['tk']); tk['quant']['tensors']['lm_head.weight']['shape'] = [16, 9]
h['__metadata__']['tk'] = json.dumps(tk)
hb = json.dumps(h).encode(); hb += b' ' * (-len(hb) % 8)
open('bad.safetensors', 'wb').write(struct.pack('<Q', len(hb)) + hb + raw[8 + n:])"
tquant dequant bad.safetensors -o d.safetensors
