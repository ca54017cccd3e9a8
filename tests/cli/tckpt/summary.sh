# The one-line summary of a save, and the JSON report.
tckpt save ck --step 1 "$TD/tiny.safetensors" --json save.json --metadata epoch=4
"$PY" -c "
import json; d = json.load(open('save.json'))
print(d['step'], d['tensors_stored'], d['logical_bytes'], d['written_bytes'] > d['logical_bytes'])"
tckpt ls ck --json - | "$PY" -c "
import json, sys; d = json.load(sys.stdin)
s = d['steps'][0]; print(s['step'], s['state'], s['parent'], s['metadata']['epoch'], s['metadata']['format'])"
