# --json reports sizes, ratio, speed and the original's SHA-256.
tcompress -q "$TD/tiny.safetensors" -o t.tkz --json r.json
"$PY" -c "
import json, hashlib
r = json.load(open('r.json'))
print(r['source'], r['bytes_in'], r['sha256'] == hashlib.sha256(open('$TD/tiny.safetensors', 'rb').read()).hexdigest())
print(sorted(r))"
