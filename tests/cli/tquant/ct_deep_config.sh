# The model's config.json goes into a compressed-tensors directory through the one JSON
# policy: nesting past 127 levels is refused (exit 3, one line; a recursive copy crashed
# on it), and anything shallower is copied as text with the quantization_config spliced
# in, so the output is the input's size (re-indenting it grew 120 levels of a 40 KB
# array to 5 MB). Both for tquant DIR and for tconvert of a tquant file in the directory.
. "$TK_SRC/tests/cli/bounded.bash"
mkdir m
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
save_file({"layers.0.q_proj.weight": np.random.default_rng(0).normal(0, 0.02, (16, 64)).astype(np.float32)},
          "m/model.safetensors")
deep = 100000
open("deep.json", "w").write('{"architectures": ["Toy"], "x": ' + "[" * deep + "]" * deep + "}\n")
shallow = 120
open("shallow.json", "w").write('{"architectures": ["Toy"],\n "x": ' + "[" * shallow + ",".join(["0"] * 20000)
                                + "]" * shallow + "}\n")
PY
quant() { bounded tquant m --scheme int4 --group-size 32 --min-elements 1 "$@" >/dev/null; }
quant -o q.safetensors
cp deep.json m/config.json
quant --format compressed-tensors -o out1/ 2>err; echo "tquant, 100000 levels: exit $?, $(wc -l <err) stderr line(s)"
cat err
mv q.safetensors m/
bounded tconvert m/q.safetensors --format compressed-tensors -o out2/ 2>err
echo "tconvert, 100000 levels: exit $?, $(wc -l <err) stderr line(s)"; cat err
rm m/q.safetensors
cp shallow.json m/config.json
quant --format compressed-tensors -o out3/; echo "tquant, 120 levels: exit $?"
"$PY" - <<'PY'
import json
src, out = open("shallow.json").read(), open("out3/config.json").read()
print("input", len(src), "bytes, output", len(out) - len(src), "bytes more")
print("the input's bytes kept:", out.startswith(src.rstrip()[:-1].rstrip()))
doc = json.loads(out)
print("keys:", list(doc), doc["quantization_config"]["config_groups"]["group_0"]["targets"])
PY
