# --max-seconds bounds the run: the cells after the bound are reported as skipped, with
# one note below the table.
tbench compress --shape 64x64 --params level=1,2,3,4,5,6 --methods lossless --reps 1 --max-seconds 0.000001 --json r.json >table.txt
grep -c '  skipped \[1\]' table.txt
$PY "$TK_SRC/tests/cli/tbench/check_results.py" r.json --expect-status ok=1 --expect-status skipped=5 | sed -n 1,2p
