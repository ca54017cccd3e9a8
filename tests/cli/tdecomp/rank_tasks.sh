# A Slurm job array's form of the sweep: each task fits its share of the realisations
# into a --partial file (--task I/N), and --merge scores them all. The merge reports
# what one process reports, bit for bit (realisations are seeded by rank and index).
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
sweep="cp x.safetensors --range 1:4 --realisations 4 --seed 3 -j 1"
tdecomp rank $sweep --json whole.json > whole.txt
for i in 0 1 2; do tdecomp rank $sweep --task $i/3 --partial part$i.json -q; done
tdecomp rank $sweep --merge part2.json part0.json part1.json --json merged.json > merged.txt
cmp whole.txt merged.txt && echo "text: identical"
cmp whole.json merged.json && echo "json: identical"
head -1 merged.txt
# A task missing, a task given twice, a part made with other options, a file that is
# not a part: each is refused with exit 3 and says why.
tdecomp rank $sweep --merge part0.json part1.json 2>&1; echo "exit $?"
tdecomp rank $sweep --merge part0.json part1.json part1.json part2.json 2>&1; echo "exit $?"
tdecomp rank cp x.safetensors --range 1:4 --realisations 4 --seed 4 -j 1 --merge part0.json part1.json part2.json 2>&1 | cut -c1-110; echo "exit ${PIPESTATUS[0]}"
tdecomp rank $sweep --merge x.safetensors 2>&1; echo "exit $?"
# Usage: --task needs --partial, and --merge fits nothing.
tdecomp rank $sweep --task 0/3 2>&1; echo "exit $?"
tdecomp rank $sweep --task 3/3 --partial p.json 2>&1; echo "exit $?"
tdecomp rank $sweep --merge part0.json --task 0/3 2>&1; echo "exit $?"
