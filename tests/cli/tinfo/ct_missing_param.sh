# A compressed-tensors directory missing one parameter of a quantized module (its root
# weight_packed, or fp8's weight, included) is invalid input naming the module: exit 3
# with one line from tinfo and tquant dequant, never the weight silently left out with
# exit 0.
. "$TK_SRC/tests/cli/bounded.bash"
mkdir m
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(0)
save_file({f"layers.{i}.q_proj.weight": rng.normal(0, 0.02, (16, 64)).astype(np.float32) for i in range(2)},
          "m/model.safetensors")
open("m/config.json", "w").write('{"torch_dtype": "float32"}\n')
PY
# drop DIR TENSOR: rewrite DIR/model.safetensors without TENSOR, metadata kept.
drop() {
  "$PY" - "$1/model.safetensors" "$2" <<'PY'
import sys
from safetensors import safe_open
from safetensors.torch import save_file
with safe_open(sys.argv[1], "pt") as f:
    meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys() if k != sys.argv[2]}
save_file(tensors, sys.argv[1], metadata=meta)
PY
}
for scheme in int4 fp8_e4m3; do
  tquant m --scheme $scheme --min-elements 1 --format compressed-tensors -o $scheme/ >/dev/null
done
for case in int4:weight_packed int4:weight_shape int4:weight_scale fp8_e4m3:weight fp8_e4m3:weight_scale; do
  scheme=${case%%:*} param=${case#*:}
  rm -rf d && cp -r $scheme d && drop d layers.1.q_proj.$param
  bounded tinfo d >/dev/null 2>err; echo "$scheme without $param: tinfo exit $?, $(wc -l <err) stderr line(s)"
  cat err
  rm -f out.safetensors
  bounded tquant dequant d -o out.safetensors 2>err; echo "$scheme without $param: tquant dequant exit $?"
done
