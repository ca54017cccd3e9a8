# The tools leave OpenMP's wait policy to the environment they are started in: libgomp
# takes OMP_WAIT_POLICY or GOMP_SPINCOUNT as given, and its default (a spin of 300,000
# iterations before sleeping) when neither is set; no tool edits its own environment.
# libgomp's own report (OMP_DISPLAY_ENV) shows the spin count it took, and tbench
# reports the policy its runs had.
spin() { OMP_DISPLAY_ENV=verbose "$@" tinfo --version 2>&1 | grep -o "GOMP_SPINCOUNT = '[0-9]*'"; }
spin env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT
spin env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive
spin env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active
spin env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000
policy() {
  tbench compress --shape 8x8 --methods lossless --reps 1 --warmup 0 --json r.json >table.txt
  "$PY" -c "import json; print(json.load(open('r.json'))['machine']['omp_wait_policy'])"
  grep -o "threads, [a-z0-9 ]* waits" table.txt
}
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT bash -c "$(declare -f policy); policy"
env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive bash -c "$(declare -f policy); policy"
env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000 bash -c "$(declare -f policy); policy"
