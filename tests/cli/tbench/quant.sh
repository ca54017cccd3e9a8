# Quant schemes on two tiny seeded tensors: schema, bounds per scheme, table on stdout.
tbench quant --shape 64x64 --dist gaussian,student-t --methods int8,int4,nf4 --reps 2 --warmup 1 --json r.json >table.txt
grep -q '^method  *params  *input  *bits_per_value (bit)' table.txt
$PY "$TK_SRC/tests/cli/tbench/check_results.py" r.json --area quant --expect-status ok=6
