#!/usr/bin/env python3
"""Check a tbench result file (docs/TBENCH.md, schema tensorkit.tbench/1): every key and
type of the form, and that the numbers are sane for each area (ratios > 0, rates > 0,
errors within the bounds each method promises on the tests' inputs).

  check_results.py FILE.json [--area AREA] [--expect-status STATUS=N ...]

Prints one summary line per cell, sorted (no timings, so the output is stable), and
exits 1 with the reasons on stderr when anything is off.
"""
import argparse
import json
import math
import sys

SCHEMA = "tensorkit.tbench/1"
BETTER = {"higher", "lower", "none"}

# Lower bounds of the SQNR (dB) each method reaches on the tests' Gaussian inputs, and
# upper bounds of its bits per value (with the scheme's default group).
QUANT_BOUNDS = {"int8": (38, 8.6), "int4": (17, 4.6), "nf4": (17, 4.6), "mxfp4": (14, 4.3),
                "nvfp4": (16, 4.6), "fp8_e4m3": (28, 8.6)}

problems = []


def need(cond, msg):
    if not cond:
        problems.append(msg)
    return cond


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_doc(doc):
    need(doc.get("schema") == SCHEMA, f"schema is {doc.get('schema')!r}")
    for key, typ in [("tool", str), ("version", str), ("created", str), ("command", list), ("machine", dict),
                     ("settings", dict), ("inputs", list), ("results", list)]:
        need(isinstance(doc.get(key), typ), f"{key} missing or not {typ.__name__}")
    m = doc.get("machine", {})
    for key, typ in [("cpu_model", str), ("logical_cpus", int), ("usable_cpus", int), ("threads", int),
                     ("memory_bytes", int), ("kernel", str), ("compiler", str)]:
        need(isinstance(m.get(key), typ), f"machine.{key} missing or not {typ.__name__}")
    bw = m.get("memory_bandwidth_gb_s")
    need(bw is None or (is_num(bw) and bw > 0), f"machine.memory_bandwidth_gb_s = {bw!r}")
    s = doc.get("settings", {})
    for key in ("warmup", "reps", "max_seconds", "seed"):
        need(is_num(s.get(key)), f"settings.{key} missing")
    names = set()
    for i in doc.get("inputs", []):
        need(isinstance(i.get("name"), str) and i.get("source") in ("synthetic", "file"), f"bad input {i}")
        names.add(i.get("name"))
        if "shape" in i:
            need(all(isinstance(d, int) and d > 0 for d in i["shape"]), f"bad shape in {i}")
            need(isinstance(i.get("dtype"), str) and is_num(i.get("bytes")), f"bad dtype/bytes in {i}")
    for r in doc.get("results", []):
        check_result(r, names)


def check_result(r, inputs):
    where = f"{r.get('method')} {r.get('params')} {r.get('input')}"
    for key, typ in [("area", str), ("method", str), ("implementation", str), ("params", dict), ("input", str),
                     ("status", str), ("note", str), ("metrics", dict)]:
        need(isinstance(r.get(key), typ), f"{where}: {key} missing or not {typ.__name__}")
    need(r.get("input") in inputs, f"{where}: input not listed in inputs")
    need(r.get("status") in ("ok", "skipped", "failed"), f"{where}: status {r.get('status')!r}")
    for name, m in r.get("metrics", {}).items():
        if not need(isinstance(m, dict), f"{where}: metric {name} is not an object"):
            continue
        v = m.get("value")
        need(v is None or is_num(v), f"{where}: {name}.value {v!r}")
        need(isinstance(m.get("unit"), str), f"{where}: {name}.unit")
        need(m.get("better") in BETTER, f"{where}: {name}.better {m.get('better')!r}")
        if "runs" in m:
            need(isinstance(m["runs"], int) and m["runs"] >= 1, f"{where}: {name}.runs")
            if is_num(v) and is_num(m.get("min")) and is_num(m.get("max")):
                need(m["min"] <= v * (1 + 1e-9) and v <= m["max"] * (1 + 1e-9), f"{where}: {name} min/median/max out of order")
    if r.get("status") == "ok":
        check_sanity(r, where)


def value(r, name):
    m = r["metrics"].get(name)
    return None if m is None else m.get("value")


def positive(r, where, *names):
    for n in names:
        v = value(r, n)
        need(is_num(v) and v > 0 and math.isfinite(v), f"{where}: {n} = {v!r}, want > 0")


def check_sanity(r, where):
    area, method, metrics = r["area"], r["method"], r["metrics"]
    rates = [n for n, m in metrics.items() if m.get("unit") in ("MB/s", "GB/s")]
    need(rates or area == "decomp", f"{where}: no throughput metric")
    positive(r, where, *rates)
    if "peak_rss_mb" in metrics:
        positive(r, where, "peak_rss_mb")
    if area == "quant":
        positive(r, where, "bits_per_value", "ratio")
        sqnr, rel, mx = value(r, "sqnr_db"), value(r, "rel_rmse"), value(r, "max_abs_error")
        need(is_num(rel) and 0 < rel < 0.5, f"{where}: rel_rmse {rel!r}")
        need(is_num(mx) and mx > 0, f"{where}: max_abs_error {mx!r}")
        need(is_num(sqnr) and abs(sqnr + 20 * math.log10(rel)) < 0.01, f"{where}: sqnr {sqnr!r} disagrees with rel_rmse")
        bound = QUANT_BOUNDS.get(method)
        if bound and "gaussian" in r["input"]:
            need(sqnr >= bound[0], f"{where}: sqnr {sqnr:.2f} dB below {bound[0]}")
            need(value(r, "bits_per_value") <= bound[1], f"{where}: bits_per_value above {bound[1]}")
    elif area == "compress":
        positive(r, where, "ratio", "bits_per_value")
        if not method.startswith("lossy-"):  # lossless methods, tensorkit's and the peers'
            need("sqnr_db" not in metrics, f"{where}: a lossless method reports an error")
            need(value(r, "ratio") > 1.0, f"{where}: ratio {value(r, 'ratio')} not above 1")
        else:
            bits = float(r["params"]["bits"])
            need(value(r, "bits_per_value") <= bits * 1.1 + 0.05, f"{where}: bits_per_value over the target {bits}")
            # Uniform quantization gains about 6 dB per bit; demand at least 4.5 dB per bit.
            need(value(r, "sqnr_db") >= 4.5 * bits, f"{where}: sqnr {value(r, 'sqnr_db')} dB at {bits} bits")
    elif area == "decomp":
        positive(r, where, "bits_per_value", "ratio", "seconds")
        rel, fit = value(r, "rel_error"), value(r, "fit")
        need(is_num(rel) and 0 <= rel < 1 and abs(fit - (1 - rel)) < 1e-9, f"{where}: rel_error {rel!r} fit {fit!r}")
        if method == "tt":
            need(rel <= float(r["params"]["tol"]) + 1e-9, f"{where}: TT error {rel} above tol")
    elif area == "ckpt":
        stall, ratio = value(r, "stall_ms"), value(r, "ratio")
        need(is_num(stall) and stall >= 0, f"{where}: stall_ms {stall!r}")
        need(is_num(ratio) and ratio > 0, f"{where}: ratio {ratio!r}")
        if r["params"].get("compression") == "none":
            need(0.9 < ratio <= 1.0, f"{where}: uncompressed checkpoint ratio {ratio}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--area")
    ap.add_argument("--expect-status", action="append", default=[], help="STATUS=N")
    a = ap.parse_args()
    with open(a.file) as f:
        doc = json.load(f)
    check_doc(doc)
    results = doc.get("results", [])
    if a.area:
        need(all(r.get("area") == a.area for r in results), f"results not all of area {a.area}")
    for spec in a.expect_status:
        status, n = spec.split("=")
        got = sum(r.get("status") == status for r in results)
        need(got == int(n), f"{got} results {status}, expected {n}")
    if problems:
        for p in problems:
            print(f"check_results: {p}", file=sys.stderr)
        sys.exit(1)
    lines = sorted(f"{r['area']} {r['method']} {json.dumps(r['params'], sort_keys=True)} {r['input']}: {r['status']}"
                   for r in results)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
