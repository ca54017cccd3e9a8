# compare: a file against itself, and two runs whose deterministic metrics (sizes,
# errors) must agree exactly, pass; a slower and less accurate copy fails with exit 1.
tbench compress --shape 32x64 --methods lossless,lossy-quant --params bits=4 --reps 1 --json a.json >/dev/null
tbench compress --shape 32x64 --methods lossless,lossy-quant --params bits=4 --reps 1 --json b.json >/dev/null
tbench compare a.json a.json | tail -1
tbench compare a.json b.json --threshold 1000000% >/dev/null && echo "second run: pass"
tbench compare a.json b.json --json - | $PY -c "
import json, sys
d = json.load(sys.stdin)
exact = [c for c in d['changes'] if c['metric'] in ('ratio', 'bits_per_value', 'sqnr_db', 'rel_rmse', 'max_abs_error')]
print(len(exact), 'deterministic metrics,', sum(c['relative_change'] != 0 for c in exact), 'differ')"
$PY -c "
import json
d = json.load(open('a.json'))
for r in d['results']:
    m = r['metrics']
    m['compress_mb_s']['value'] *= 0.5
    if 'sqnr_db' in m: m['sqnr_db']['value'] -= 3
json.dump(d, open('worse.json', 'w'))"
tbench compare a.json worse.json >out.txt
echo "rc=$?"
grep -c ' slower$' out.txt
grep -c ' worse$' out.txt
tail -1 out.txt
tbench compare worse.json a.json | tail -1
