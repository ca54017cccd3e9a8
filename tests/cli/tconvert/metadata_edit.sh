# --set-metadata and --drop-metadata edit the output's metadata; "format": "pt" is added
# (transformers requires it) unless dropped; the key 'tk' and malformed pairs are refused.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
save_file({"w": np.zeros(2, np.float32)}, "in.safetensors", metadata={"author": "a", "license": "mit"})
PY
tconvert -q in.safetensors -o out.safetensors --set-metadata license=apache-2.0 --set-metadata note=x=y \
  --drop-metadata author
tconvert -q in.safetensors -o bare.safetensors --no-provenance --drop-metadata format --drop-metadata author
"$PY" - <<'PY'
from safetensors import safe_open
m = safe_open("out.safetensors", "np").metadata()
print(sorted(m), m["license"], m["note"], m["format"])
print(sorted(safe_open("bare.safetensors", "np").metadata()))
PY
tconvert -q in.safetensors -o x.safetensors --set-metadata novalue; echo "rc=$?"
tconvert -q in.safetensors -o x.safetensors --set-metadata tk=1 2>&1; echo "rc=$?"
tconvert -q in.safetensors -o x.safetensors --set-metadata a=1 --drop-metadata a 2>&1; echo "rc=$?"
