#!/usr/bin/env bash
# scripts/slurm/train_requeue.sbatch warned by Slurm itself: --time=2 --signal=B:USR1@110
# makes slurmctld send SIGUSR1 to the batch shell about 10 s into the run (its time-limit
# check runs periodically, so up to a minute later). mpi_train saves on it, the job
# requeues itself and is released early; the second run resumes from that step. Then
# scancel's SIGTERM makes the ranks save again, and tckpt verify passes.
source "$(dirname "$0")/lib.sh"
command -v mpi_train >/dev/null || fail "mpi_train not built (needs MPI: scripts/install-deps.sh)"

job=$(sbatch --parsable --ntasks=2 --time=2 --signal=B:USR1@110 --chdir="$work" --output="$work/train.out" \
  "$scripts/train_requeue.sbatch" mpi_train --dir "$work/ckpt" --steps 100000000 --every 50 --sleep-ms 20)
# The bounds come from the clock of the events, not of an idle machine: the job first
# has to start (a busy machine delays the scheduler and the launch); then the signal is
# due 10 s into the run, slurmctld looks for due signals every 30 s (its periodic
# background pass) and the requeue finishes the run (KillWait=5 and the epilog). Twice
# the pass plus a minute leaves room for a loaded machine without waiting forever.
running() { job_states "$job" | grep -qx RUNNING || requeued "$job"; }
wait_for 120 "the job to start" running
started=$SECONDS
wait_for $((10 + 2 * 30 + 60)) "the time-limit signal and the requeue" requeued "$job"
echo "signal and requeue $((SECONDS - started)) s after the start"
release "$job"

saved=$(sed -n 's/^saved step \([0-9]*\) on signal$/\1/p' train.out)
[ -n "$saved" ] || fail "no step saved on the time-limit signal: $(grep -v '^committed' train.out)"
grep -q '^batch shell: SIGUSR1 at ' train.out || fail "the batch shell got no SIGUSR1"
resumed() { grep -qE "^resumed from step $saved on 2 ranks \(saved by 2 ranks\)$" train.out; }
wait_for 60 "the second run to resume from step $saved" resumed
grep -qx "run 1 of job $job: 2 tasks on .*" train.out || fail "no second run (SLURM_RESTART_COUNT=1)"

# SIGTERM (scancel): the ranks save once more and the job is not requeued.
scancel "$job"
wait_done "$job" 60 CANCELLED
grep -v '^committed' train.out
[ "$(grep -c ' on signal$' train.out)" -eq 2 ] || fail "expected a save on SIGUSR1 and one on SIGTERM"
[ "$(grep -c '^requeueing' train.out)" -eq 1 ] || fail "requeued after SIGTERM"
tckpt -q verify ckpt >/dev/null || fail "tckpt verify"
echo "ok: time-limit signal at step $saved, requeued, resumed, saved again on SIGTERM"
