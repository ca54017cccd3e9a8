# tinfo lists the directories the tools write. A checkpoint root shows its steps; a step
# (DIR/step-N) is a tensor file like any other, so tinfo diff compares it with the file
# saved, and tconvert reads a root as its newest step. A model store shows its files.
# --stats on a root, which has no tensors of its own, is refused (exit 2).
export SOURCE_DATE_EPOCH=1700000000
tckpt save ck --step 10 "$TD/tiny.safetensors" --metadata epoch=1 -q
tckpt save ck --step 20 "$TD/tiny.safetensors" --compress lossless -q
tinfo ck
tinfo --metadata ck/ | tail -4
tinfo ck/step-20 | head -1
tinfo diff "$TD/tiny.safetensors" ck/step-20 | tail -1
tconvert ck -o latest.safetensors -q && tinfo diff "$TD/tiny.safetensors" latest.safetensors | tail -1
tinfo --json - ck | "$PY" -c "
import json, sys
d = json.load(sys.stdin)['files'][0]
print(d['format'], [s['step'] for s in d['steps']], d['steps'][0]['metadata'])"
tinfo --stats ck 2>&1; echo "stats rc=$?"
tcompress store add --store S "$TD/tiny.safetensors" -q
tcompress store add --store S latest.safetensors -q
tinfo S
tinfo --json - S | "$PY" -c "
import json, sys
d = json.load(sys.stdin)['files'][0]
print(d['format'], [f['name'] for f in d['files']], d['logical_bytes'] > d['stored_bytes'])"
tconvert S -o x.safetensors 2>&1; echo "store as input rc=$?"
