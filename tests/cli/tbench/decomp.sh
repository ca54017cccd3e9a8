# CP, Tucker and TT on a tiny seeded low-rank tensor.
tbench decomp --shape 12x10x8 --params rank=2,8 --params tol=0.1 --reps 1 --json r.json >/dev/null
$PY "$TK_SRC/tests/cli/tbench/check_results.py" r.json --area decomp --expect-status ok=5
