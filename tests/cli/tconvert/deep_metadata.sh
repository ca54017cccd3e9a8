# A 'tk' metadata value of objects nested 10^5 levels deep is kept verbatim, under
# "previous", when tconvert adds its provenance; no crash.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
save_file({"w": np.zeros(2, np.float32)}, "deep.safetensors", metadata={"tk": '{"a":' * 100000 + "0" + "}" * 100000})
PY
tconvert deep.safetensors -o out.safetensors -q
"$PY" - <<'PY'
import json
from safetensors import safe_open
tk = json.loads(safe_open("out.safetensors", "np").metadata()["tk"])
print(tk["previous"] == '{"a":' * 100000 + "0" + "}" * 100000, [p["tool"] for p in tk["provenance"]])
PY
