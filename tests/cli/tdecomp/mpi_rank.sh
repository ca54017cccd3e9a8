# tdecomp rank under mpirun: every rank fits its share of the realisations, rank 0
# scores them all. On 1, 2, 3 and 4 ranks (oversubscribed on small machines) the report
# is the serial one, bit for bit. An error on one rank (here rank 1 cannot read its
# input) stops every rank with the same message and exit code, without a hang.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
sweep="x.safetensors --range 1:4 --realisations 4 --seed 3 -j 1"
tdecomp rank cp $sweep --json serial.json > serial.txt
for np in 1 2 3 4; do
  timeout 120 mpirun -np $np tdecomp rank cp $sweep --json mpi$np.json > mpi$np.txt
  echo "np $np: exit $? $(cmp -s serial.txt mpi$np.txt && cmp -s serial.json mpi$np.json && echo identical)"
done
printf 'not a tensor file' > bad.safetensors
timeout 120 mpirun -np 3 bash -c 'in=x.safetensors; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && in=bad.safetensors
  exec tdecomp rank cp "$in" --range 1:2 --realisations 2 -j 1' > /dev/null 2> err.txt
echo "one rank failing: exit $?"
grep '^tdecomp: error' err.txt | sort | uniq -c | sed 's/^ *//'
# A job-array flag under mpirun is refused on every rank.
timeout 120 mpirun -np 2 tdecomp rank cp $sweep --task 0/2 --partial p.json > /dev/null 2> err2.txt
echo "job-array flags: exit $?"
grep '^tdecomp: error' err2.txt | uniq -c | sed 's/^ *//'
