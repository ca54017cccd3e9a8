# A .tkz container reads as the tensor file it holds: tinfo lists its tensors with codecs,
# stored bytes and ratios, decodes them for --stats and diff, and tconvert converts it. A
# container of an HDF5 file holds opaque bytes, not tensors, and says so.
tcompress -q --container "$TD/tiny.safetensors" -o t.tkz
tinfo t.tkz -t '*weight'
tinfo --stats -t special t.tkz
tinfo diff -q "$TD/tiny.safetensors" t.tkz && echo "diff: equal"
tconvert -q t.tkz -o t.h5 && tinfo diff -q t.h5 "$TD/tiny.safetensors" && echo "tconvert: equal"
tinfo --json - t.tkz | $PY -c "
import json, sys
f = json.load(sys.stdin)['files'][0]
print(f['format'], f['original_bytes'], f['container_bytes'] > 0, sorted({t['codec'] for t in f['tensors']}))"
tconvert -q "$TD/tiny.safetensors" -o tiny.h5
tcompress -q --container tiny.h5 -o h.tkz
tinfo h.tkz 2>&1
tinfo - <t.tkz 2>&1; echo "stdin: rc=$?"
