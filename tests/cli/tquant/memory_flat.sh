# Peak memory flat in the model's size: the same tensors (2 MiB each), 32 of them and
# then 128 (64 and 256 MiB), quantized with --scheme to safetensors and GGUF; and with
# --budget 256 tensors of 256 KiB and then of 1 MiB (its solver's table grows with the
# number of tensors, up to 64 MiB at 256: see BENCHMARKS). The peak resident set (GNU
# time) of the larger model may exceed the smaller's by under 12 MiB. Before, the output
# hashed through a mapping, the parts held up to 64 MiB and the budget's sampled rows
# grew it by 40-55 MiB.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(5)
base = [rng.standard_normal((512, 1024), dtype=np.float32) * 0.02 for _ in range(8)]
for name, count in (("small", 32), ("large", 128)):
    save_file({f"blocks.{i}.weight": base[i % 8] * (1 + i / count) for i in range(count)}, f"{name}.safetensors")
for name, rows in (("bsmall", 64), ("blarge", 256)):
    save_file({f"blocks.{i}.weight": base[i % 8][:rows] * (1 + i / 256) for i in range(256)}, f"{name}.safetensors")
PY
peak() {  # peak resident KiB of one run
  /usr/bin/time -f %M -o rss tquant "$@" -q -f >/dev/null 2>err || { cat err; echo "failed: $*"; }
  tail -n 1 rss
}
check() {  # SMALL LARGE FLAGS...
  local small large grow
  small=$(peak "$1.safetensors" "${@:3}")
  large=$(peak "$2.safetensors" "${@:3}")
  grow=$(( (large - small) / 1024 ))
  echo "${*:3}: 4x the model, peak under 12 MiB higher: $([ "$grow" -lt 12 ] && echo yes || echo "no ($grow MiB)")"
}
check small large --scheme int4 -o q.safetensors
check small large --scheme q4k -o q.gguf
check bsmall blarge --budget 6 --candidates int4,int8 -o q.safetensors
