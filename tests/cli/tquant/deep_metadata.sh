# A 'tk' metadata value of objects nested 10^5 levels deep: quantize keeps it verbatim under
# "previous"; dequant, which must read it, refuses it with one line and exit 3.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
w = np.linspace(-1, 1, 256, dtype=np.float32).reshape(8, 32)
save_file({"w": w}, "deep.safetensors", metadata={"tk": '{"a":' * 100000 + "0" + "}" * 100000})
PY
tquant deep.safetensors --scheme kmeans:3 --min-elements 1 -q -o q.safetensors >/dev/null
echo "quantize: $?"
"$PY" - <<'PY'
import json
from safetensors import safe_open
tk = json.loads(safe_open("q.safetensors", "np").metadata()["tk"])
print(tk["previous"] == '{"a":' * 100000 + "0" + "}" * 100000, sorted(tk["quant"]["tensors"]))
PY
tquant dequant deep.safetensors -o d.safetensors 2>err
echo "dequant: $?"
wc -l <err
cat err >&2
