# A set SOURCE_DATE_EPOCH is the time a checkpoint records, so two saves of the same
# tensors give the same manifest; restore refuses to replace a file without -f and
# applies metadata edits.
SOURCE_DATE_EPOCH=1700000000 tckpt save a "$TD/tiny.safetensors" -q
SOURCE_DATE_EPOCH=1700000000 tckpt save b "$TD/tiny.safetensors" -q
tckpt ls a | tail -1
cmp a/step-0/manifest.json b/step-0/manifest.json && echo same-manifest
tckpt restore a -o r.safetensors -q --set-metadata stage=restored
tckpt restore a -o r.safetensors -q; echo "rc=$?"
"$PY" -c 'from safetensors import safe_open; m = safe_open("r.safetensors", "np").metadata(); print(m["stage"], m["format"])'
