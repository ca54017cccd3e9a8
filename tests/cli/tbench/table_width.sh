# Text tables fit 100 columns (they ran to ~270 with the spread of each timed metric):
# every area, timed metrics with a spread, two inputs; every metric of the JSON is a
# column of the table and every row is there. Notes of rows that did not run are numbered
# below the table, each once.
check() {
  $PY - "$1" "$2" <<'PY'
import json, sys
area, table = sys.argv[1], open(sys.argv[2], encoding="utf-8").read().splitlines()
report = json.load(open("r.json"))
widest = max(len(line) for line in table)
names = {m for r in report["results"] for m in r["metrics"]}
headers = {w for line in table if line.startswith(("method", "#  ")) for w in line.split()}
missing = sorted(names - headers)
rows = [line for line in table if line.split()[:1] in ([r["method"]] for r in report["results"])]
blocks = sum(1 for line in table if line.startswith("method"))
print(f"{area}: {'fits 100 columns' if widest <= 100 else f'{widest} columns'}, "
      f"{'every metric shown' if not missing else f'missing {missing}'}, "
      f"{'every row in each block' if len(rows) == blocks * len(report['results']) else f'{len(rows)} rows'}")
PY
}
tbench quant --shape 32x64 --dist gaussian,student-t --reps 2 --warmup 0 --json r.json >t.txt; check quant t.txt
tbench compress --shape 32x64 --dist gaussian,student-t --params bits=3 --reps 2 --warmup 0 --json r.json >t.txt
check compress t.txt
tbench decomp --shape 16x32 --dist lowrank,gaussian --params rank=2 --reps 2 --warmup 0 --json r.json >t.txt
check decomp t.txt
tbench io --shape 64x64 --dist gaussian,student-t --dir . --reps 2 --warmup 0 --json r.json >t.txt; check io t.txt
tbench ckpt --shape 64x64 --dist gaussian,student-t --dir . --reps 2 --warmup 0 --json r.json >t.txt
check ckpt t.txt
tbench compress --shape 64x64 --params level=1,2,3 --methods lossless --reps 1 --max-seconds 0.000001 >t.txt
grep -c '  skipped \[1\]  ' t.txt
grep -x '\[1\] --max-seconds 1e-06 reached' t.txt
