# A step saved by 3 ranks (rows and columns split unevenly, one replicated tensor) is
# listed, verified and assembled into one ordinary safetensors file by tckpt, which
# needs no MPI; -t selects tensors.
tk_dckpt_fixture ck 4 3
tckpt ls ck | awk '{print $1, $3, $(NF-1)}'
tckpt ls ck --json - -q | $PY -c 'import json,sys; print("world_size", json.load(sys.stdin)["steps"][0]["world_size"])'
tckpt verify ck -q
tckpt restore ck -q -o all.safetensors
tckpt restore ck -q --step 4 -t w -o w.safetensors
$PY - <<'PY'
import numpy as np
from safetensors.numpy import load_file
a = load_file("all.safetensors")
print(sorted(a))
assert (a["w"] == np.arange(30, dtype=np.float32).reshape(10, 3)).all()
assert (a["v"] == 100 + np.arange(20, dtype=np.float64).reshape(4, 5)).all()
assert (a["b"] == np.array([7, 8, 9], dtype=np.int32)).all()
print(sorted(load_file("w.safetensors")), "bit-exact")
PY
