# A compressed-tensors directory takes the source directory's side files only when they
# are regular files inside it: a tokenizer_config.json linking to a file outside (here a
# stand-in for /etc/shadow), a link to a device and a FIFO are not copied (nor opened: the
# FIFO has no writer and would block) and are named in one warning line.
. "$TK_SRC/tests/cli/bounded.bash"
mkdir m
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
save_file({"layers.0.q_proj.weight": np.random.default_rng(0).normal(0, 0.02, (16, 64)).astype(np.float32)},
          "m/model.safetensors")
open("m/config.json", "w").write('{"architectures": ["Toy"]}\n')
open("m/generation_config.json", "w").write('{"do_sample": false}\n')
open("secret", "w").write("root:$6$secret\n")
PY
ln -s ../secret m/tokenizer_config.json
ln -s /dev/zero m/vocab.txt
mkfifo m/special_tokens_map.json
bounded tquant m --scheme int4 --group-size 32 --min-elements 1 --format compressed-tensors -o out/ >/dev/null 2>err
echo "tquant: exit $?, $(wc -l <err) stderr line(s)"
cat err
ls out
