#!/usr/bin/env bash
# tdecomp rank under Slurm, both ways: scripts/slurm/tdecomp-mpi.sbatch on 4 ranks
# (srun --mpi=pmix), and scripts/slurm/tdecomp-rank-array.sbatch as a 3-task array and
# its merge job. Both reports are the serial run's, byte for byte.
source "$(dirname "$0")/lib.sh"

"$TK_PYTHON" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
sweep=(cp "$work/x.safetensors" --range 1:4 --realisations 4 --seed 3)
tdecomp rank "${sweep[@]}" -j 1 --json want.json >want.txt

mpi=$(sbatch --parsable -n 4 --chdir="$work" "$scripts/tdecomp-mpi.sbatch" rank "${sweep[@]}" --json "$work/mpi.json")
arr=$(sbatch --parsable --array=0-2 --chdir="$work" "$scripts/tdecomp-rank-array.sbatch" fit "$work/parts" "${sweep[@]}")
merge=$(sbatch --parsable --dependency=afterok:"$arr" --chdir="$work" "$scripts/tdecomp-rank-array.sbatch" \
  merge "$work/parts" "${sweep[@]}" --json "$work/merged.json")
for id in "$mpi" "$arr" "$merge"; do wait_done "$id" 150; done

cmp want.json mpi.json || fail "4 MPI ranks reported otherwise than one process"
cmp want.txt "tk-decomp-mpi-$mpi.out" || fail "the MPI job's stdout: $(cat "tk-decomp-mpi-$mpi.out")"
[ "$(ls parts)" = "$(printf 'part-0.json\npart-1.json\npart-2.json')" ] || fail "parts: $(ls parts)"
cmp want.json merged.json || fail "the merged array reported otherwise than one process"
echo "ok: 4 MPI ranks and a 3-task array + merge report the serial selection"
