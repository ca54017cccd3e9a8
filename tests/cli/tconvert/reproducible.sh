# The same input and options give the same bytes in any directory: provenance keeps the
# names of paths, not their directories.
mkdir -p a/deep b
cp "$TD/tiny.safetensors" a/deep/in.safetensors
cp "$TD/tiny.safetensors" b/in.safetensors
tconvert -q "$PWD/a/deep/in.safetensors" -o "$PWD/a/deep/out.safetensors" --dtype bf16
(cd b && tconvert -q in.safetensors -o out.safetensors --dtype bf16)
cmp a/deep/out.safetensors b/out.safetensors && echo identical
"$PY" - <<'PY'
import json
from safetensors import safe_open
print(json.loads(safe_open("b/out.safetensors", "np").metadata()["tk"])["provenance"][-1]["args"])
PY
