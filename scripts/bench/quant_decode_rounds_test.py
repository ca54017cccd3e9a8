"""tk_bench_quant --decode-rounds on a small block: one JSON record per (scheme, matrix),
every window counted once as 'core to itself' or 'core shared', the quartiles in order,
and a bad round count is a usage error (exit 2)."""
import json
import subprocess
import sys

bench = sys.argv[1]
rounds = 5
out = subprocess.run([bench, "--rows", "16", "--cols", "512", "--decode-rounds", str(rounds), "--dist", "both",
                      "--schemes", "int4,kmeans:7,trellis:2:8", "--json"],
                     check=True, capture_output=True, text=True, env={"OMP_NUM_THREADS": "1"}).stdout
lines = [json.loads(line) for line in out.splitlines()]
assert "machine" in lines[0], lines[0]
assert lines[1]["add_probe_best_g_s"] > 0, lines[1]
records = lines[2:]
assert sorted((r["scheme"], r["dist"]) for r in records) == sorted(
    (s, d) for s in ("int4", "kmeans:7", "trellis:2:8") for d in ("gauss", "t4")), records
for r in records:
    assert r["rounds"] == rounds and r["rows"] == 16 and r["cols"] == 512, r
    assert r["own_core_windows"] + r["shared_core_windows"] == rounds, r
    assert 0 < r["cache_gb_s_p25"] <= r["cache_gb_s_median"] <= r["cache_gb_s_p75"] <= r["cache_gb_s_best"], r
    assert r["bpw"] > 0, r
bad = subprocess.run([bench, "--decode-rounds", "0"], capture_output=True, text=True)
assert bad.returncode == 2 and "--decode-rounds" in bad.stderr and len(bad.stderr.splitlines()) == 1, (bad.returncode, bad.stderr)
print("ok")
