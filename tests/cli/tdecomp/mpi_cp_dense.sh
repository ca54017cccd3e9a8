# tdecomp cp on a dense tensor under mpirun: each rank reads only its slab of mode 0,
# every other mode's MTTKRP is summed over the slabs, and rank 0 writes. On 1 to 4 ranks
# the fit and the factors are the serial run's up to the order of floating-point sums
# (the same 8 iterations), for the Gram start and a random one, nonnegative too, and
# for an f32 HDF5 file with factors stored as f16 (their error measured on the slabs).
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
"$PY" -c "
import h5py
from safetensors.numpy import load_file
with h5py.File('x.h5', 'w') as f:
    f.create_dataset('x', data=load_file('x.safetensors')['x'].astype('float32'), chunks=(4, 13, 12))"
for args in "x.safetensors" "x.safetensors --init random --restarts 2" "x.safetensors --nonneg" \
            "x.h5 --factor-dtype f16"; do
  echo "cp $args"
  tdecomp cp $args --rank 3 --seed 4 --max-iters 8 -j 1 -q -f -o s.safetensors --json s.json
  for np in 1 2 3 4; do
    timeout 120 mpirun -np $np tdecomp cp $args --rank 3 --seed 4 --max-iters 8 -j 1 -q -f -o m.safetensors --json m.json
    echo " np $np: exit $?"
    "$PY" - <<'PYEOF'
import json
import numpy as np
from safetensors.numpy import load_file
s, m = (json.load(open(p))["tensors"][0] for p in ("s.json", "m.json"))
a, b = load_file("s.safetensors"), load_file("m.safetensors")
close = max(float(np.abs(a[k].astype("f8") - b[k].astype("f8")).max()) for k in a)
print("  iterations", s["iterations"], m["iterations"], "error within 1e-6:", abs(s["rel_error"] - m["rel_error"]) < 1e-6,
      "same tensors:", sorted(a) == sorted(b), "factors within 1e-5:", close < 1e-5)
PYEOF
  done
done
# Messages cut into 64-byte rounds give the same bytes as whole ones.
timeout 120 mpirun -np 3 tdecomp cp x.safetensors --rank 3 --seed 4 --max-iters 8 -j 1 -q -f -o a.safetensors
timeout 120 mpirun -np 3 -x TK_MPI_MESSAGE_BYTES=64 tdecomp cp x.safetensors --rank 3 --seed 4 --max-iters 8 -j 1 -q -f \
  -o b.safetensors
echo "64-byte rounds: exit $? $("$PY" -c "
import numpy as np
from safetensors.numpy import load_file
a, b = load_file('a.safetensors'), load_file('b.safetensors')
print('identical' if sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a) else 'different')")"
# Options that do not run across ranks are refused on every rank alike.
timeout 120 mpirun -np 2 tdecomp cp x.safetensors --budget 1KiB -o budget.safetensors > /dev/null 2> err.txt
echo "--budget: exit $?"
grep '^tdecomp: error' err.txt | uniq -c | sed 's/^ *//'
timeout 120 mpirun -np 2 tdecomp tt x.safetensors --tol 0.1 -o t.safetensors > /dev/null 2> err2.txt
echo "tt: exit $?"
grep '^tdecomp: error' err2.txt | uniq -c | sed 's/^ *//'
