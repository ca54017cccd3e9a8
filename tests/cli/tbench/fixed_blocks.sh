# group_size is crossed only with the schemes that take it: int4 runs once per group
# size, q4k and mxfp4 (blocks fixed by their formats) once each, and no cell fails. A
# group_size given only to schemes that cannot take it is refused.
tbench quant --shape 64x256 --dist gaussian --methods int4,q4k,mxfp4 --params group_size=32,64 --reps 1 \
  --json r.json >/dev/null
echo "rc=$?"
$PY -c "
import json
for r in json.load(open('r.json'))['results']:
    print(r['method'], r['params'].get('group_size', '-'), r['status'])"
tbench quant --methods q4k --params group_size=32 2>&1; echo "rc=$?"
