# compressed-tensors "re:" targets match as the package's match_name does (re.match:
# anchored at the start of the module name only), in time linear in the name: an
# ignore entry that makes a backtracking matcher take exponential time against a
# 40-character module name ran past any bound. A pattern RE2 cannot take (a
# backreference) is invalid input, exit 3 with one line.
. "$TK_SRC/tests/cli/bounded.bash"
mkdir m
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
save_file({"a" * 40 + ".weight": np.random.default_rng(0).normal(0, 0.02, (16, 64)).astype(np.float32)},
          "m/model.safetensors")
open("m/config.json", "w").write('{"torch_dtype": "float32"}\n')
PY
tquant m --scheme int4 --group-size 32 --min-elements 1 --format compressed-tensors -o ct/ >/dev/null
# One directory per target (its group's only one), each with the hostile ignore entry;
# compressed-tensors' own verdict on each in verdicts.txt.
"$PY" - <<'PY' >verdicts.txt
import json, shutil
from compressed_tensors.utils.match import match_name
targets = ["re:a{3}", "re:a{3}$", "re:b|a", "re:.*a", "re:(a|aa)*", r"re:\w+\.", r"re:(a)\1"]
for i, target in enumerate(targets):
    shutil.copytree("ct", f"ct{i}")
    c = json.load(open("ct/config.json"))
    c["quantization_config"]["config_groups"]["group_0"]["targets"] = [target]
    c["quantization_config"]["ignore"] = ["re:(a|aa)*c"]
    json.dump(c, open(f"ct{i}/config.json", "w"), indent=2)
    print(target, "quantized" if match_name("a" * 40, target) else "dense")
PY
i=0
while read -r target theirs; do
  bounded tinfo ct$i >out.txt 2>err
  rc=$?
  grep -q ' int4 ' out.txt && ours=quantized || ours=dense
  echo "$target: tinfo exit $rc, $ours; compressed-tensors: $theirs"
  i=$((i + 1))
done <verdicts.txt
wc -l <err
cat err
