#!/usr/bin/env bash
# scripts/slurm/submit_array.sh on a 4-shard model, in both modes at once: every array
# task's output is byte for byte what the tool gives run here, the merge job (afterok)
# checks all of them and writes the summary and index; a merge over a damaged result fails.
source "$(dirname "$0")/lib.sh"

mkdir model
"$TK_PYTHON" - model <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(17)
folder, n = sys.argv[1], 4
weight_map = {}
for k in range(1, n + 1):
    shard = f"model-{k:05d}-of-{n:05d}.safetensors"
    tensors = {f"layers.{k}.mlp.weight": rng.normal(0, 0.02, (64, 96)).astype(np.float32),
               f"layers.{k}.attn.weight": rng.normal(0, 0.02, (32, 64)).astype(np.float16),
               f"layers.{k}.norm.weight": np.ones(64, np.float32)}
    save_file(tensors, os.path.join(folder, shard), metadata={"format": "pt"})
    weight_map.update({name: shard for name in tensors})
with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)
PY

read -r comp_array comp_merge < <(bash "$scripts/submit_array.sh" model out-c compress --chunk 4096)
read -r quant_array quant_merge < <(bash "$scripts/submit_array.sh" model out-q quant --scheme int4)
for id in "$comp_array" "$comp_merge" "$quant_array" "$quant_merge"; do wait_done "$id" 90; done
[ "$(job_states "$comp_array" | wc -l)" -eq 4 ] || fail "expected 4 array tasks: $(job_states "$comp_array")"

model=$PWD/model
for k in 1 2 3 4; do
  shard=model-0000$k-of-00004.safetensors
  tcompress -q -j 1 --chunk 4096 "$model/$shard" -o "want-$shard.tkz"
  cmp "want-$shard.tkz" "out-c/$shard.tkz" || fail "array task $k (compress) wrote other bytes"
  # tquant records its arguments in the output: run it with the task's own, over a copy.
  mv "out-q/$shard" "got-$shard"
  tquant -j 1 -f --scheme int4 "$model/$shard" -o "$work/out-q/$shard" >/dev/null 2>&1
  mv "out-q/$shard" "want-$shard" && mv "got-$shard" "out-q/$shard"
  cmp "want-$shard" "out-q/$shard" || fail "array task $k (quant) wrote other bytes"
done
for out in out-c out-q; do
  [ "$(tail -n +2 "$out/summary.tsv" | cut -f5 | sort | uniq -c | tr -s ' ')" = " 4 ok" ] ||
    fail "$out/summary.tsv: $(cat "$out/summary.tsv")"
done
cmp model/model.safetensors.index.json out-c/model.safetensors.index.json
# The new index maps every tensor of the quantized shards to its shard.
tinfo -q --parts out-q/model.safetensors.index.json | tail -n +3 | awk '{ print $1 }' | sort >got-names
for k in 1 2 3 4; do tinfo -q --parts "want-model-0000$k-of-00004.safetensors" | tail -n +3 | awk '{ print $1 }'; done |
  sort >want-names
cmp want-names got-names || fail "merged index lists other tensors"
[ "$(wc -l <want-names)" -gt 12 ] || fail "quantized shards hold only $(wc -l <want-names) tensors"

# A damaged result: the merge job fails and names the shard.
printf 'x' | dd of=out-c/model-00003-of-00004.safetensors.tkz bs=1 seek=100 conv=notrunc status=none
rm out-c/model.safetensors.index.json
bad=$(sbatch --parsable --chdir="$work/out-c" "$scripts/array_merge.sbatch" "$model" "$work/out-c" compress)
wait_done "$bad" 60 FAILED
grep -qP '^model-00003-of-00004.safetensors\t.*\tFAILED$' out-c/summary.tsv || fail "summary: $(cat out-c/summary.tsv)"
[ ! -e out-c/model.safetensors.index.json ] || fail "failed merge wrote the index"
echo "ok: 2 x 4 array tasks and their merge jobs"
