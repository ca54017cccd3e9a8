# OpenMP threads wait passively unless the user chose: with neither OMP_WAIT_POLICY nor
# GOMP_SPINCOUNT set, a tool starts libgomp with OMP_WAIT_POLICY=passive (set before the
# libraries load, src/cli/wait_policy.h), whether a shell started it (with `_` in its
# environment) or a program did (without); either variable set is kept as it is.
# libgomp's own report (OMP_DISPLAY_ENV) shows the spin count it took, and tbench
# reports the policy its runs had.
spin() { OMP_DISPLAY_ENV=verbose "$@" tinfo --version 2>&1 | grep -o "GOMP_SPINCOUNT = '[0-9]*'"; }
spin env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT _=/bin/tinfo
spin env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u _
spin env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active
spin env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000
policy() {
  tbench compress --shape 8x8 --methods lossless --reps 1 --warmup 0 --json r.json >table.txt
  "$PY" -c "import json; print(json.load(open('r.json'))['machine']['omp_wait_policy'])"
  grep -o "threads, [a-z0-9 ]* waits" table.txt
}
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT bash -c "$(declare -f policy); policy"
OMP_WAIT_POLICY=active bash -c "$(declare -f policy); policy"
env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000 bash -c "$(declare -f policy); policy"
