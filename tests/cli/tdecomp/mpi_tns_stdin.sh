# Sparse CP under mpirun reads a .tns by path, each rank its part: standard input, which
# one process holds, is refused with one line and exit 2, on one rank as on several.
printf '1 1 1.5\n2 3 2.0\n3 2 -1\n' > x.tns
for p in 1 2; do
  mpirun -n $p tdecomp cp - --rank 1 -q -o /dev/null < x.tns 2>err >/dev/null
  echo "P=$p rc=$?"
  grep -E "^tdecomp: error: " err | sort -u
done
