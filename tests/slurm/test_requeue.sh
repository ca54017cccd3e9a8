#!/usr/bin/env bash
# scripts/slurm/train_requeue.sbatch with mpi_train on 4 ranks: once a step is committed
# the batch shell gets SIGUSR1 (scancel --signal=USR1 --batch: what --signal=B:USR1@T
# sends, without waiting for a time limit whose signal may come a minute late), the
# ranks save and the job requeues itself. The pending job is shrunk to 2 tasks and
# released (the requeue otherwise waits 2 minutes); the second run resumes from the
# step saved on the signal and finishes. The checkpoint then restores onto 3 ranks bit
# for bit and passes tckpt verify. The job checkpoints through a node-local first tier
# (@NODE_TMP@): the step saved on the signal is flushed to the shared directory before
# the ranks exit.
source "$(dirname "$0")/lib.sh"
command -v mpi_train >/dev/null || fail "mpi_train not built (needs MPI: scripts/install-deps.sh)"

steps=200
job=$(sbatch --parsable --ntasks=4 --chdir="$work" --output="$work/train.out" \
  "$scripts/train_requeue.sbatch" mpi_train --dir "$work/ckpt" --local @NODE_TMP@ --steps $steps --every 10 --sleep-ms 20)
wait_for 60 "a committed step" grep -qs '^committed step' train.out
scancel --signal=USR1 --batch "$job"

wait_for 60 "the job to requeue itself" requeued "$job"
scontrol update JobId="$job" NumTasks=2 NumCPUs=2
release "$job"
wait_done "$job" 90
cat train.out

saved=$(sed -n 's/^saved step \([0-9]*\) on signal$/\1/p' train.out)
[ -n "$saved" ] && [ "$saved" -lt $steps ] || fail "no step saved on the signal"
grep -qx "durable step $saved" train.out || fail "step $saved saved on the signal was not reported durable"
grep -qx "run 0 of job $job: 4 tasks on .*" train.out || fail "first run not on 4 tasks"
grep -q "^requeueing job $job$" train.out || fail "the job did not requeue itself"
grep -qx "run 1 of job $job: 2 tasks on .*" train.out || fail "no second run on 2 tasks (SLURM_RESTART_COUNT=1)"
grep -qE "^resumed from step $saved on 2 ranks \(saved by 4 ranks\)$" train.out || fail "second run did not resume from step $saved"
grep -qx "done step $steps" train.out || fail "second run did not finish"
[ "$(grep -c '^starting fresh$' train.out)" -eq 1 ] || fail "expected one fresh start"

srun --mpi=pmix --ntasks=3 mpi_train --dir ckpt --steps $steps --every 10 --check >check.out
grep -qE "^checked step $steps on 3 ranks \(saved by 2 ranks\)$" check.out || fail "restore onto 3 ranks: $(cat check.out)"
tckpt -q verify ckpt >/dev/null || fail "tckpt verify"
tckpt ls ckpt | awk -v s="$saved" '$1 == s && / committed / { found = 1 } END { exit !found }' ||
  fail "step $saved saved on the signal is not listed: $(tckpt ls ckpt)"
# The step saved on the signal, assembled from the 4 ranks' slices by tckpt restore, holds
# the values mpi_train gives every global index (examples/mpi_train.c).
tckpt -q restore ckpt --step "$saved" -o signal-step.safetensors
"$TK_PYTHON" - signal-step.safetensors "$saved" <<'PY' || fail "restored step $saved holds other values"
import sys
import numpy as np
from safetensors.numpy import load_file
t, step = load_file(sys.argv[1]), int(sys.argv[2])
i, j = np.indices((1000, 37), dtype=np.uint64)
assert np.array_equal(t["w"], ((step * 7919 + (i * 37 + j) * 31) % 16777216).astype(np.float32))
i, j = np.indices((24, 333))
assert np.array_equal(t["v"], step * 1e6 + (i * 333 + j) + 0.25)
assert np.array_equal(t["b"], (np.float32(step % 4096) + np.arange(37, dtype=np.float32) / np.float32(64)))
for r in range(4):
    assert np.array_equal(t[f"opt.r{r}"], step * 100000 + r * 1000 + np.arange(64))
assert len(t) == 7, sorted(t)
PY
echo "ok: signal at step $saved, requeued, resumed on 2 ranks, restored onto 3"
