#!/usr/bin/env python3
"""Decompositions: tdecomp against TensorLy (numpy backend), same data, same run.

  decomp_vs_tensorly.py [--tdecomp PATH] [--reps N] [--threads LIST] [--small]
                        [--cases LIST] [--seed S] [--json PATH]

Cases (fixed seeds; noise added as X = T + 0.01 ||T|| N / ||N||), as in issue 3:
  cp200     CP-ALS rank 10 on 200^3 (rank-10 CP, N(0,1) factors, + noise): TensorLy
            parafac with its SVD init vs tdecomp cp (Gram init); then 5 seeds of random
            init each, counting runs that reach 1.001x the noise floor in 100 iterations
  cp4d      CP-ALS rank 8 on 100x100x100x20
  tucker200 Tucker [20,20,20] on 200^3 (orthonormal factors, N(0,1) core, + noise):
            TensorLy tucker (HOOI) vs tdecomp tucker (ST-HOSVD)
  tt16      TT on the 16^5 tensor 1/(1+i+j+k+l+m): TensorLy with the ranks [1,7,8,8,7,1]
            picked by hand vs tdecomp tt --tol 1e-6 (ranks chosen by the tool)
  sparse    sparse CP rank 16 on 1000^3 with 10^6 random nonzeros (.tns): tdecomp only
            (TensorLy has no sparse CP on the numpy backend); iteration time and the .tns
            read speed
Time per iteration excludes the initialisation for both tools (TensorLy: from its
per-iteration callback; tdecomp: its own figure). Each case runs with 1 thread, then 2 (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
tdecomp -j for both tools). The data is generated first and passed as .npy / .tns files;
TensorLy runs in a fresh interpreter that times only the decomposition, and tdecomp's
own reported decomposition time is used (file reading and writing excluded). Timed
figures are medians of --reps runs. Peak memory (maximum resident size of each
process, from /usr/bin/time) is reported for the dense CP runs, next to the input's size,
and so is tdecomp's working memory: its peak less the input and less the peak of
`tdecomp --version` (the same process with its shared libraries loaded and no data), as
a share of the input.
--small shrinks every case for CI (a few seconds). Prints a Markdown table; --json writes
the tbench result form (docs/TBENCH.md).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

SCRIPT = "decomp_vs_tensorly.py"
VERSION = "0.1.0"


def die(msg):
    sys.exit(f"{SCRIPT}: error: {msg}")


# ---- data (generated outside every timed region) ----

def add_noise(rng, t, level=0.01):
    import numpy as np
    n = rng.normal(size=t.shape)
    return t + level * np.linalg.norm(t) * n / np.linalg.norm(n)


def cp_tensor(rng, shape, rank):
    import numpy as np
    import tensorly as tl
    factors = [rng.normal(size=(n, rank)) for n in shape]
    return tl.cp_to_tensor((np.ones(rank), factors))


def make_data(case, small, rng, folder):
    """Write the case's input; returns (path, facts)."""
    import numpy as np
    if case in ("cp200", "cp4d"):
        shape, rank = {"cp200": ((200, 200, 200), 10), "cp4d": ((100, 100, 100, 20), 8)}[case]
        if small:
            shape = tuple(max(4, n // 5) for n in shape)
        t = cp_tensor(rng, shape, rank)
        x = add_noise(rng, t)
        floor = float(np.linalg.norm(x - t) / np.linalg.norm(x))
        facts = {"rank": rank, "shape": list(shape), "noise_floor": floor}
    elif case == "tucker200":
        n, r = (40, 5) if small else (200, 20)
        core = rng.normal(size=(r, r, r))
        us = [np.linalg.qr(rng.normal(size=(n, r)))[0] for _ in range(3)]
        import tensorly as tl
        t = tl.tucker_to_tensor((core, us))
        x = add_noise(rng, t)
        facts = {"ranks": [r] * 3, "shape": [n] * 3}
    elif case == "tt16":
        n = 8 if small else 16
        idx = np.indices((n,) * 5).sum(axis=0)
        x = 1.0 / (1.0 + idx)
        facts = {"ranks": [1, 7, 8, 8, 7, 1], "shape": [n] * 5, "tol": 1e-6}
    elif case == "sparse":
        n, nnz = (100, 10_000) if small else (1000, 1_000_000)
        coords = rng.integers(0, n, size=(nnz, 3))
        vals = rng.normal(size=nnz)
        path = os.path.join(folder, "sparse.tns")
        np.savetxt(path, np.column_stack([coords + 1, vals]), fmt=["%d", "%d", "%d", "%.17g"])
        return path, {"rank": 16, "shape": [n] * 3, "nnz": nnz, "bytes": os.path.getsize(path)}
    else:
        die(f"unknown case '{case}'")
    path = os.path.join(folder, case + ".npy")
    np.save(path, np.ascontiguousarray(x))
    facts["bytes"] = int(x.nbytes)
    return path, facts


# ---- TensorLy, in a fresh interpreter per run ----

PEER = r"""
import json, sys, time
import numpy as np
import tensorly as tl
from tensorly.decomposition import parafac, tucker, tensor_train
args = json.loads(sys.argv[1])
x = np.load(args["path"])
t0 = time.perf_counter()
spi = None
if args["method"] == "cp":
    stamps = []  # one per iteration: the time per iteration without the initialisation
    cp, errors = parafac(x, args["rank"], n_iter_max=args["iters"], init=args["init"], tol=1e-8,
                         random_state=args.get("seed"), return_errors=True,
                         callback=lambda *a: stamps.append(time.perf_counter()))
    seconds = time.perf_counter() - t0
    xh, iters = tl.cp_to_tensor(cp), len(errors)
    if len(stamps) > 1:
        spi = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
    # With a callback, parafac evaluates the error of its initialisation once by a full
    # reconstruction; that evaluation, timed again here, is not part of its work.
    t1 = time.perf_counter()
    np.linalg.norm(x - tl.cp_to_tensor(cp))
    seconds -= time.perf_counter() - t1
elif args["method"] == "tucker":
    core_factors = tucker(x, rank=args["ranks"])
    seconds = time.perf_counter() - t0
    xh, iters = tl.tucker_to_tensor(core_factors), 0
else:
    tt = tensor_train(x, rank=args["ranks"])
    seconds = time.perf_counter() - t0
    xh, iters = tl.tt_to_tensor(tt), 0
err = float(np.linalg.norm(x - xh) / np.linalg.norm(x))
print(json.dumps({"seconds": seconds, "iterations": iters, "rel_error": err, "seconds_per_iteration": spi}))
"""


def run_with_rss(cmd, env):
    """Run cmd under /usr/bin/time; returns (stdout, wall seconds, peak RSS in MiB).
    (The rusage of a child forked from this interpreter would start from the
    interpreter's own resident size; /usr/bin/time's child starts small.)"""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            die(f"{' '.join(cmd[:3])} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
        return p.stdout, wall, int(rss.read().split()[-1]) / 1024.0


def thread_env(threads):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    return env


def tensorly_run(args, threads):
    out, wall, rss = run_with_rss([sys.executable, "-c", PEER, json.dumps(args)], thread_env(threads))
    r = json.loads(out)
    r["peak_rss_mb"] = rss
    return r


def tdecomp_run(tdecomp, argv, threads, folder):
    out_path = os.path.join(folder, "out.safetensors")
    cmd = [tdecomp] + argv + ["-j", str(threads), "-q", "-f", "--json", "-", "-o", out_path]
    out, wall, rss = run_with_rss(cmd, thread_env(threads))
    t = json.loads(out)["tensors"][0]
    return {"seconds": t["seconds"], "iterations": t["iterations"], "rel_error": t["rel_error"],
            "seconds_per_iteration": t["seconds_per_iteration"] if t["iterations"] else None,
            "ranks": t["ranks"], "wall": wall, "peak_rss_mb": rss}


# ---- cases ----

def median_runs(fn, reps):
    runs = [fn() for _ in range(reps)]
    keys = ("seconds", "seconds_per_iteration", "wall", "peak_rss_mb")
    out = dict(runs[-1])
    for k in keys:
        if out.get(k) is not None:
            vals = [r[k] for r in runs]
            out[k] = statistics.median(vals)
            out[k + "_range"] = (min(vals), max(vals))
    return out


def measure_case(case, path, facts, opts, threads, folder):
    """Returns a list of (label, tool, params, run dict) for one case and thread count."""
    rows = []
    reps, td = opts.reps, opts.tdecomp
    if case in ("cp200", "cp4d"):
        r = facts["rank"]
        iters = 100
        peer = median_runs(lambda: tensorly_run({"path": path, "method": "cp", "rank": r, "iters": iters,
                                                 "init": "svd"}, threads), reps)
        ours = median_runs(lambda: tdecomp_run(td, ["cp", path, "--rank", str(r), "--max-iters", str(iters)],
                                               threads, folder), reps)
        rows += [("svd/gram init", "tensorly", {"rank": r, "init": "svd"}, peer),
                 ("svd/gram init", "tdecomp", {"rank": r, "init": "gram"}, ours)]
        if case == "cp200":
            floor = facts["noise_floor"]
            for tool in ("tensorly", "tdecomp"):
                hits, secs, errs = 0, [], []
                for seed in range(5):
                    if tool == "tensorly":
                        run = tensorly_run({"path": path, "method": "cp", "rank": r, "iters": iters,
                                            "init": "random", "seed": seed}, threads)
                    else:
                        run = tdecomp_run(td, ["cp", path, "--rank", str(r), "--init", "random", "--seed",
                                               str(seed), "--max-iters", str(iters)], threads, folder)
                    hits += run["rel_error"] <= 1.001 * floor
                    secs.append(run["seconds"])
                    errs.append(run["rel_error"])
                rows.append(("random init, 5 seeds", tool, {"rank": r, "init": "random"},
                             {"seconds": statistics.median(secs), "iterations": None,
                              "rel_error": statistics.median(errs), "seeds_at_floor": hits}))
    elif case == "tucker200":
        ranks = facts["ranks"]
        peer = median_runs(lambda: tensorly_run({"path": path, "method": "tucker", "ranks": ranks}, threads), reps)
        ours = median_runs(lambda: tdecomp_run(td, ["tucker", path, "--ranks", ",".join(map(str, ranks))],
                                               threads, folder), reps)
        rows += [("ranks " + "x".join(map(str, ranks)), "tensorly", {"ranks": str(ranks)}, peer),
                 ("ranks " + "x".join(map(str, ranks)), "tdecomp", {"ranks": str(ranks)}, ours)]
    elif case == "tt16":
        peer = median_runs(lambda: tensorly_run({"path": path, "method": "tt", "ranks": facts["ranks"]}, threads), reps)
        ours = median_runs(lambda: tdecomp_run(td, ["tt", path, "--tol", "1e-6"], threads, folder), reps)
        rows += [("hand-picked ranks", "tensorly", {"ranks": str(facts["ranks"])}, peer),
                 ("--tol 1e-6", "tdecomp", {"tol": 1e-6}, ours)]
    elif case == "sparse":
        ours = median_runs(lambda: tdecomp_run(td, ["cp", path, "--rank", "16", "--max-iters", "20"],
                                               threads, folder), reps)
        # Everything but the decomposition (start, .tns parse, tiny output) counts as
        # reading: a lower bound on the read speed.
        ours["read_mb_s"] = facts["bytes"] / 1e6 / max(ours["wall"] - ours["seconds"], 1e-9)
        rows.append(("nnz %d" % facts["nnz"], "tdecomp", {"rank": 16}, ours))
    return rows


# ---- report ----

def machine(threads):
    import numpy
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu_model": cpu, "logical_cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
            "threads": threads, "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
            "memory_bandwidth_gb_s": None, "kernel": f"{platform.system()} {platform.release()}",
            "compiler": f"CPython {platform.python_version()}, numpy {numpy.__version__}"}


def metric(value, unit, better, rng=None, runs=None):
    m = {"value": value, "unit": unit, "better": better}
    if rng:
        m.update({"min": rng[0], "max": rng[1], "runs": runs})
    return m


def result(case, label, tool, params, run, facts, threads, reps):
    import tensorly
    metrics = {"seconds": metric(run["seconds"], "s", "lower", run.get("seconds_range"), reps),
               "rel_error": metric(run["rel_error"], "1", "lower")}
    if run.get("iterations"):
        metrics["iterations"] = metric(run["iterations"], "1", "none")
    if run.get("seconds_per_iteration"):
        metrics["seconds_per_iter"] = metric(run["seconds_per_iteration"], "s", "lower")
    if "peak_rss_mb" in run:
        metrics["peak_rss_mb"] = metric(run["peak_rss_mb"], "MiB", "lower")
    if "seeds_at_floor" in run:
        metrics["seeds_at_noise_floor"] = metric(run["seeds_at_floor"], "1", "higher")
    if "read_mb_s" in run:
        metrics["tns_read_mb_s"] = metric(run["read_mb_s"], "MB/s", "higher")
    impl = "tensorkit" if tool == "tdecomp" else f"tensorly {tensorly.__version__} (numpy)"
    method = f"{case}" if tool == "tdecomp" else f"tensorly-{case}"
    p = dict(params, threads=threads, variant=label)
    return {"area": "decomp", "method": method, "implementation": impl, "params": p, "input": case,
            "status": "ok", "note": "", "metrics": metrics}


def fmt(v, digits=4):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--tdecomp", default=os.path.join(here, "..", "..", "build", "tdecomp"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--small", action="store_true", help="tiny cases for CI")
    ap.add_argument("--cases", default="cp200,cp4d,tucker200,tt16,sparse")
    ap.add_argument("--json", help="write the tbench result form here")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not os.access(args.tdecomp, os.X_OK):
        die(f"no tdecomp at {args.tdecomp}; build it or pass --tdecomp")
    import numpy as np
    threads = [int(t) for t in args.threads.split(",")]
    cases = args.cases.split(",")
    results, inputs = [], []
    _, _, baseline_mib = run_with_rss([args.tdecomp, "--version"], dict(os.environ))
    print(f"| case | variant | tool | threads | seconds | iters | s/iter | rel_error | peak MiB | notes |")
    print(f"|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="decomp_bench_") as folder:
        for case in cases:
            rng = np.random.default_rng([args.seed, zlib.crc32(case.encode())])
            path, facts = make_data(case, args.small, rng, folder)
            inputs.append({"name": case, "source": "synthetic", "shape": facts["shape"],
                           "dtype": "F64", "bytes": facts["bytes"], **({"nnz": facts["nnz"]} if "nnz" in facts else {})})
            for t in threads:
                for label, tool, params, run in measure_case(case, path, facts, args, t, folder):
                    results.append(result(case, label, tool, params, run, facts, t, args.reps))
                    notes = []
                    if "seeds_at_floor" in run:
                        notes.append(f"{run['seeds_at_floor']}/5 at 1.001x floor {facts['noise_floor']:.5f}")
                    if "ranks" in run and tool == "tdecomp" and case == "tt16":
                        notes.append(f"ranks {run['ranks']}")
                    if "read_mb_s" in run:
                        notes.append(f".tns read >= {run['read_mb_s']:.0f} MB/s ({facts['bytes'] / 1e6:.0f} MB)")
                    if "peak_rss_mb" in run and case.startswith("cp"):
                        input_mib = facts["bytes"] / 2**20
                        notes.append(f"input {input_mib:.0f} MiB")
                        if tool == "tdecomp":
                            extra = run["peak_rss_mb"] - baseline_mib - input_mib
                            notes.append(f"beyond the input and the {baseline_mib:.1f} MiB of libraries: {extra:.1f} MiB "
                                         f"= +{100 * extra / input_mib:.0f}%")
                    iters = run.get("iterations")
                    spi = run.get("seconds_per_iteration")
                    print(f"| {case} | {label} | {tool} | {t} | {fmt(run['seconds'])} | {fmt(iters)} | "
                          f"{fmt(spi)} | {fmt(run['rel_error'], 6)} | {fmt(run.get('peak_rss_mb'))} | "
                          f"{'; '.join(notes)} |", flush=True)
    if args.json:
        doc = {"schema": "tensorkit.tbench/1", "tool": SCRIPT, "version": VERSION,
               "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "command": [SCRIPT] + sys.argv[1:], "machine": machine(max(threads)),
               "settings": {"warmup": 0, "reps": args.reps, "max_seconds": 0, "seed": args.seed},
               "inputs": inputs, "results": results}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
