# One flipped bit in a data file: verify and restore both fail with exit 3 naming the
# tensor, and restore writes nothing under the output name.
tckpt save ck --step 1 "$TD/tiny.safetensors" -q
tckpt save ck --step 2 "$TD/tiny.safetensors" -q
"$PY" - <<'PY'
import json
m = json.load(open('ck/step-2/manifest.json'))
t = next(t for t in m['tensors'] if t['name'] == 'lm_head.weight')
with open('ck/step-2/' + t['shard'], 'r+b') as f:
    f.seek(t['offset'] + 5); b = f.read(1); f.seek(t['offset'] + 5); f.write(bytes([b[0] ^ 4]))
PY
tckpt verify ck
echo "verify: $?"
tckpt restore ck -o out.safetensors
echo "restore: $?"
test -e out.safetensors && echo "output written"
tckpt verify ck --step 1 -q >/dev/null && echo "step 1 intact"
