#!/usr/bin/env bash
# Sparse CP of a .tns under Slurm: scripts/slurm/tdecomp-mpi.sbatch cp on 4 ranks (srun
# --mpi=pmix). The fit and factors are the serial run's up to the order of floating-point
# sums, for the same 8 iterations, and only rank 0 writes the output.
source "$(dirname "$0")/lib.sh"

"$TK_PYTHON" "$TK_SRC/tests/cli/tdecomp/gen.py" sparse x.tns
run=("$work/x.tns" --rank 3 --seed 5 --max-iters 8 -q)
tdecomp cp "${run[@]}" -j 1 -o want.safetensors --json want.json

job=$(sbatch --parsable -n 4 --chdir="$work" "$scripts/tdecomp-mpi.sbatch" cp "${run[@]}" \
  -o "$work/mpi.safetensors" --json "$work/mpi.json")
wait_done "$job" 150
"$TK_PYTHON" - <<'PYEOF' || fail "4 ranks under srun differ from one process: $(cat "tk-decomp-mpi-$job.out")"
import json
import numpy as np
from safetensors.numpy import load_file
want, got = (json.load(open(p))["tensors"][0] for p in ("want.json", "mpi.json"))
a, b = load_file("want.safetensors"), load_file("mpi.safetensors")
assert got["iterations"] == want["iterations"] == 8, (got["iterations"], want["iterations"])
assert abs(got["fit"] - want["fit"]) < 1e-10 * want["fit"], (got["fit"], want["fit"])
assert int(np.prod(got["mpi"]["grid"])) == 4, got["mpi"]
assert sorted(a) == sorted(b) and max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-8
PYEOF
echo "ok: sparse CP on 4 ranks under srun matches one process"
