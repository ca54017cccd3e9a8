#!/usr/bin/env bash
# scripts/slurm/store_add.sbatch as a 4-task array running at the same time into one
# store that does not exist yet: every task adds the shared base model and its own
# outputs; afterwards every stored file comes back byte for byte and store verify passes.
source "$(dirname "$0")/lib.sh"

"$TK_PYTHON" - "$work" <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(23)
work = sys.argv[1]
base = {f"layers.{i}.weight": rng.normal(0, 0.02, (128, 128)).astype(np.float16) for i in range(4)}
save_file(base, os.path.join(work, "base.safetensors"))
for k in range(1, 5):
    out = os.path.join(work, "out", f"task-{k}")
    os.makedirs(out)
    ft = {n: (t + rng.normal(0, 5e-4, t.shape)).astype(np.float16) for n, t in base.items()}
    save_file(ft, os.path.join(out, "model.safetensors"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"task": k}, f)
PY

store=$work/store
job=$(sbatch --parsable --array=1-4 --chdir="$work" "$scripts/store_add.sbatch" \
  "$store" "$work/base.safetensors" "$work/out/task-%a")
wait_done "$job" 90

[ "$(grep -l '^added 3 files' tk-store-add-*.out | wc -l)" -eq 4 ] || fail "$(cat tk-store-add-*.out)"
# Adds ran at the same time into the one store: at least two of them overlapped. (Not
# all four: on a loaded machine Slurm starts some tasks a few tenths of a second after
# the first ones ended, as a fresh-clone `make test` found: two pairs overlapped, the
# pairs not each other.)
spans=$(sed -n 's/^added .*(from \([0-9.]*\) to \([0-9.]*\))$/\1 \2/p' tk-store-add-*.out)
awk '{ b[NR] = $1; e[NR] = $2 }
     END { for (i = 1; i <= NR; ++i) for (j = i + 1; j <= NR; ++j)
             if (b[i] < e[j] && b[j] < e[i]) exit 0
           exit 1 }' <<<"$spans" ||
  fail "no two adds of the array tasks overlapped: $spans"
grep -q 'verified' tk-store-add-*.out || fail "no task verified the store"

names=$(tcompress store ls --store "$store" | tail -n +2 | awk '{ print $1 }' | sort | tr '\n' ' ')
want="base.safetensors task-1/config.json task-1/model.safetensors task-2/config.json task-2/model.safetensors "
want+="task-3/config.json task-3/model.safetensors task-4/config.json task-4/model.safetensors "
[ "$names" = "$want" ] || fail "stored names: $names"
tcompress -q store get --store "$store" base.safetensors -f -o got
cmp got base.safetensors || fail "base.safetensors comes back different"
for k in 1 2 3 4; do
  for f in model.safetensors config.json; do
    tcompress -q store get --store "$store" "task-$k/$f" -f -o got
    cmp got "out/task-$k/$f" || fail "task-$k/$f comes back different"
  done
done
tcompress -q store verify --store "$store" || fail "store verify"
echo "ok: 4 concurrent array tasks into one store"
