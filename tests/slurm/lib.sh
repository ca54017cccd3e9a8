# Sourced by the Slurm tests: strict mode, Slurm's commands pointed at the test cluster
# (TK_SLURM_DIR), the tools of the build on PATH for the jobs (sbatch exports the
# environment), a fresh scratch directory $work, and bounded waits for jobs.
set -euo pipefail

test_name=$(basename "$0" .sh)
test_name=${test_name#test_}
here=$(cd "$(dirname "$0")" && pwd)
scripts=$TK_SRC/scripts/slurm
eval "$(bash "$here/cluster.sh" env "$TK_SLURM_DIR")"
export PATH="$TK_BIN:$PATH"
work=$TK_TMP/slurm/$test_name
rm -rf "$work" && mkdir -p "$work"
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

# job_states ID: the state of the job, or of every task of an array, one a line.
job_states() { scontrol show job -o "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }

# wait_done ID [SECONDS [STATE]]: wait until no task of job ID is pending or running,
# then require every one in STATE (default COMPLETED); else show the job and fail.
wait_done() {
  local id=$1 limit=${2:-60} want=${3:-COMPLETED} deadline
  deadline=$((SECONDS + limit))
  while [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]; do
    [ $SECONDS -lt $deadline ] || { scontrol show job "$id" >&2; fail "job $id not done after $limit s"; }
    sleep 0.3
  done
  if job_states "$id" | grep -vqx "$want"; then
    scontrol show job "$id" >&2
    tail -n 20 "$work"/*.out >&2 || true
    fail "job $id: expected $want, got $(job_states "$id" | sort | uniq -c | tr -s ' \n' ' ')"
  fi
}

# wait_for SECONDS WHAT CMD...: poll CMD until it succeeds.
wait_for() {
  local limit=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + limit))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "timed out after $limit s waiting for $what"
    sleep 0.2
  done
}

# requeued ID: job ID has been requeued once and waits for its begin time. Slurm sets
# that time (about 120 s ahead) only when the requeued run has finished completing, so
# the reason BeginTime, not the state PENDING alone, says the requeue is done.
requeued() {
  local info
  info=$(scontrol show job -o "$1")
  grep -q 'JobState=PENDING Reason=BeginTime' <<<"$info" && grep -q 'Restarts=1 ' <<<"$info"
}

# release ID: start a requeued job now instead of after Slurm's requeue delay. Not in
# the second of the requeue: slurmd revokes the previous run's credential by time, at
# one-second resolution, and a run started within that second is killed at once ("Job
# credential revoked"). Retried until the job has left PENDING.
release() {
  local id=$1 deadline=$((SECONDS + 30))
  sleep 2
  while scontrol show job -o "$id" | grep -q 'JobState=PENDING'; do
    [ $SECONDS -lt $deadline ] || { scontrol show job "$id" >&2; fail "job $id still pending 30 s after its release"; }
    scontrol update JobId="$id" StartTime=now
    sleep 1
  done
}
