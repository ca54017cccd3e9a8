# tdecomp tucker under mpirun: each rank reads only its slab of the mode ST-HOSVD
# projects last (a safetensors byte range, an HDF5 hyperslab), the Gram matrices are
# summed over the ranks, and rank 0 writes. On 1 to 4 ranks the ranks, the error and the
# reconstruction are the serial run's up to the order of floating-point sums, and the
# --tol bound holds on every P.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker x.safetensors
"$PY" -c "
import h5py
from safetensors.numpy import load_file
with h5py.File('x.h5', 'w') as f:
    f.create_dataset('x', data=load_file('x.safetensors')['x'].astype('float32'), chunks=(4, 11, 10))"
compare() {  # compare NAME: the serial run s.* against the MPI run NAME.*
  tdecomp reconstruct "$1.safetensors" -q -f -o "$1.rec.safetensors"
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
import numpy as np
from safetensors.numpy import load_file
name, tol = sys.argv[1], float(sys.argv[2])
s = json.load(open("s.json"))["tensors"][0]
m = json.load(open(name + ".json"))["tensors"][0]
a, b = load_file("s.rec.safetensors")["x"], load_file(name + ".rec.safetensors")["x"]
print("  ranks", m["ranks"], "same:", s["ranks"] == m["ranks"], "error within 1e-9:",
      abs(s["rel_error"] - m["rel_error"]) < 1e-9, "reconstruction within", tol, ":",
      float(np.linalg.norm(a - b) / np.linalg.norm(a)) < tol, "bound holds:", m["rel_error"] <= 1e-3 or "ranks" in name)
PYEOF
}
for args in "x.safetensors --tol 1e-3" "x.safetensors --ranks 3,3,3 --method hooi --max-iters 3" "x.h5 --tol 1e-3"; do
  echo "tucker $args"
  tdecomp tucker $args -j 1 -q -o s.safetensors -f --json s.json
  tdecomp reconstruct s.safetensors -q -f -o s.rec.safetensors
  for np in 1 2 3 4; do
    timeout 120 mpirun -np $np tdecomp tucker $args -j 1 -q -f -o m$np.safetensors --json m$np.json
    echo " np $np: exit $?"
    compare m$np 1e-6
  done
done
# A NaN in one rank's slab: every rank stops with the same message and exit code.
"$PY" -c "
from safetensors.numpy import load_file, save_file
x = load_file('x.safetensors')['x']
x[1, 2, 9] = float('nan')
save_file({'x': x}, 'nan.safetensors')"
timeout 120 mpirun -np 3 tdecomp tucker nan.safetensors --tol 1e-3 -o n.safetensors > /dev/null 2> err.txt
echo "NaN on one rank: exit $?"
grep '^tdecomp: error' err.txt | sort | uniq -c | sed 's/^ *//'
timeout 120 mpirun -np 2 tdecomp tucker x.safetensors --budget 1KiB -o b.safetensors > /dev/null 2> err2.txt
echo "--budget: exit $?"
grep '^tdecomp: error' err2.txt | uniq -c | sed 's/^ *//'
