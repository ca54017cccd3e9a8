# One flipped bit inside a tensor's record: exit 3 naming the tensor.
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
tcompress -q m.safetensors -o m.tkz
# The payload of layer.0.w: its record offset and length from the listing.
read off stored < <(tcompress -l m.tkz --json - | "$PY" -c "
import json, sys
r = [r for r in json.load(sys.stdin)['records'] if r['name'] == 'layer.0.w'][0]
print(r['offset'] if 'offset' in r else 0, r['stored'])")
"$PY" -c "
import sys
b = bytearray(open('m.tkz', 'rb').read()); at = $off + 48 + $stored // 2; b[at] ^= 0x04
open('m.tkz', 'wb').write(b)"
tcompress -d m.tkz -o out.safetensors
