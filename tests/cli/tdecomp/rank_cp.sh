# Rank selection picks the planted CP rank; --svg draws both curves.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" plain x.safetensors
tdecomp rank cp x.safetensors --range 1:5 --realisations 5 --seed 3 --svg r.svg --json - | "$PY" -c "
import json, sys
r = json.load(sys.stdin)['tensors'][0]
print('chosen', r['chosen'], 'ranks', [s['rank'] for s in r['ranks']])
print('corcondia at 3 > 90:', r['ranks'][2]['corcondia'] > 90)"
grep -c '<svg' r.svg
