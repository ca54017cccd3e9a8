# --budget picks ranks and a factor dtype within the bytes; narrower dtypes buy rank.
# (-j 1: some thirty decompositions of a tiny tensor.)
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker x.safetensors
tdecomp tucker x.safetensors --budget 600 -j 1 --json r.json -q -o d.safetensors
"$PY" -c "
import json
t = json.load(open('r.json'))['tensors'][0]
print('within budget:', t['bytes_out'] <= 600)
print('candidates', [c['factor_dtype'] for c in t['budget_candidates']])
best = min(c['rel_error'] for c in t['budget_candidates'])
print('best kept:', t['rel_error'] == best)
print('fit > 0.99:', t['fit'] > 0.99)"
tdecomp reconstruct d.safetensors -q -o y.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error x.safetensors y.safetensors x 1e-2
