# tdecomp cp on a .tns under mpirun: the ranks split the file by bytes (lines straddle
# the cuts), exchange the nonzeros to a grid of layers and the factor rows between
# them. On 1, 2, 3 and 4 ranks the fit and factors are the serial ones up to the order
# of floating-point sums (the same 8 iterations), and only rank 0 writes.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" sparse x.tns
run="x.tns --rank 3 --seed 5 --max-iters 8 -j 1 -q"
tdecomp cp $run -o serial.safetensors --json serial.json
for np in 1 2 3 4; do
  timeout 120 mpirun -np $np tdecomp cp $run -o mpi$np.safetensors --json mpi$np.json
  echo "np $np: exit $?"
  "$PY" - "$np" <<'PYEOF'
import json, sys
import numpy as np
from safetensors.numpy import load_file
n = int(sys.argv[1])
s = json.load(open("serial.json"))["tensors"][0]
m = json.load(open(f"mpi{n}.json"))["tensors"][0]
a, b = load_file("serial.safetensors"), load_file(f"mpi{n}.safetensors")
print("  iterations", s["iterations"], m["iterations"], "fit within 1e-10:", abs(s["fit"] - m["fit"]) < 1e-10 * s["fit"])
print("  same tensors:", sorted(a) == sorted(b), "factors within 1e-8:", max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-8)
print("  grid of", int(np.prod(m["mpi"]["grid"])), "ranks; rows sent:", m["mpi"]["bytes_sent_per_iteration_max"] > 0)
PYEOF
done
# Messages cut into parts of 100 bytes (gathers in rounds) give the same bytes as whole
# ones: how exchanges over 2 GiB go.
timeout 120 mpirun -np 3 -x TK_MPI_MESSAGE_BYTES=100 tdecomp cp $run -o parts.safetensors
echo "100-byte messages: exit $? $("$PY" -c "
import numpy as np
from safetensors.numpy import load_file
a, b = load_file('mpi3.safetensors'), load_file('parts.safetensors')
print('identical' if sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a) else 'different')")"
# Two nonzeros on three ranks: ranks and layers without nonzeros.
printf '1 1 1 1.0\n2 2 2 2.0\n' > tiny.tns
timeout 120 mpirun -np 3 tdecomp cp tiny.tns --rank 2 -q -o tiny.safetensors --json tiny.json
echo "tiny on 3 ranks: exit $? fit $("$PY" -c "import json; print(round(json.load(open('tiny.json'))['tensors'][0]['fit'], 6))")"
# A bad line that one rank reads: every rank stops with the same message and exit code.
sed '700s/.*/1 2 x 3/' x.tns > bad.tns
timeout 120 mpirun -np 3 tdecomp cp bad.tns --rank 3 -o bad.safetensors > /dev/null 2> err.txt
echo "bad line: exit $?"
grep '^tdecomp: error' err.txt | sort | uniq -c | sed 's/^ *//'
# What is not spread over ranks is refused under mpirun, on every rank alike.
timeout 120 mpirun -np 2 tdecomp cp - --rank 3 -o s.safetensors < x.tns > /dev/null 2> err2.txt
echo "stdin: exit $?"
grep '^tdecomp: error' err2.txt | uniq -c | sed 's/^ *//'
timeout 120 mpirun -np 2 tdecomp tt serial.safetensors --tol 0.1 -o t.safetensors > /dev/null 2> err3.txt
echo "tt: exit $?"
grep '^tdecomp: error' err3.txt | uniq -c | sed 's/^ *//'
