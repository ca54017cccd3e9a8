# Lossless, BitX and lossy quant at two rates on a tiny Gaussian tensor.
tbench compress --shape 64x128 --params bits=3,5 --reps 2 --json r.json >/dev/null
$PY "$TK_SRC/tests/cli/tbench/check_results.py" r.json --area compress --expect-status ok=4
