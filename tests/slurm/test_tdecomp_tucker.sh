#!/usr/bin/env bash
# Tucker of an HDF5 field under Slurm: scripts/slurm/tdecomp-mpi.sbatch tucker on 3 ranks
# (srun --mpi=pmix), each reading its hyperslab. The ranks, the error (within the --tol
# bound) and the reconstruction are the serial run's up to the order of sums.
source "$(dirname "$0")/lib.sh"

"$TK_PYTHON" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker x.safetensors
"$TK_PYTHON" -c "
import h5py
from safetensors.numpy import load_file
with h5py.File('x.h5', 'w') as f:
    f.create_dataset('x', data=load_file('x.safetensors')['x'], chunks=(4, 11, 10))"
tdecomp tucker "$work/x.h5" --tol 1e-3 -j 1 -q -o want.safetensors --json want.json
job=$(sbatch --parsable -n 3 --chdir="$work" "$scripts/tdecomp-mpi.sbatch" tucker "$work/x.h5" --tol 1e-3 -q \
  -o "$work/mpi.safetensors" --json "$work/mpi.json")
wait_done "$job" 150
tdecomp reconstruct want.safetensors -q -o want.rec.safetensors
tdecomp reconstruct mpi.safetensors -q -o mpi.rec.safetensors
"$TK_PYTHON" - <<'PYEOF' || fail "3 ranks under srun differ from one process: $(cat "tk-decomp-mpi-$job.out")"
import json
import numpy as np
from safetensors.numpy import load_file
want, got = (json.load(open(p))["tensors"][0] for p in ("want.json", "mpi.json"))
assert got["ranks"] == want["ranks"] and got["rel_error"] <= 1e-3, (got, want)
assert abs(got["rel_error"] - want["rel_error"]) < 1e-9, (got["rel_error"], want["rel_error"])
a, b = load_file("want.rec.safetensors")["x"], load_file("mpi.rec.safetensors")["x"]
assert np.linalg.norm(a - b) / np.linalg.norm(a) < 1e-9
PYEOF
echo "ok: Tucker on 3 ranks under srun matches one process"
