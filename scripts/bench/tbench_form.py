"""The tbench result form (docs/TBENCH.md, schema tensorkit.tbench/1) for the peer
suites in scripts/bench, so that `tbench compare` and the plots take their output
beside tbench's own.

    doc = document("io_vs_safetensors.py", sys.argv, inputs, results, reps=3, warmup=1)
    write(doc, path)
"""
import json
import os
import platform
import statistics
import sys
import time

SCHEMA = "tensorkit.tbench/1"


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def machine(threads=None):
    """The machine block; memory bandwidth is tbench's to measure (null here)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu_model": _cpu_model(), "logical_cpus": os.cpu_count() or 0, "usable_cpus": usable or 0,
            "threads": threads or usable or 0, "memory_bytes": _memory_bytes(), "memory_bandwidth_gb_s": None,
            "kernel": f"{platform.system()} {platform.release()}",
            "compiler": f"{platform.python_implementation()} {platform.python_version()}"}


def metric(value, unit, better):
    ok = isinstance(value, (int, float)) and value == value and abs(value) != float("inf")
    return {"value": value if ok else None, "unit": unit, "better": better}


def rate(seconds, nbytes, unit="MB/s"):
    """A throughput metric from run times: median, min and max in MB/s (or GB/s)."""
    scale = 1e9 if unit == "GB/s" else 1e6
    m = metric(nbytes / statistics.median(seconds) / scale, unit, "higher")
    m.update({"min": nbytes / max(seconds) / scale, "max": nbytes / min(seconds) / scale, "runs": len(seconds)})
    return m


def duration(seconds, unit="s"):
    scale = 1e3 if unit == "ms" else 1
    m = metric(statistics.median(seconds) * scale, unit, "lower")
    m.update({"min": min(seconds) * scale, "max": max(seconds) * scale, "runs": len(seconds)})
    return m


def timed(fn, reps, warmup=1, before=None):
    """Run fn warmup times untimed, then reps times timed; returns (seconds, last value)."""
    seconds, out = [], None
    for i in range(warmup + reps):
        if before:
            before()
        t = time.perf_counter()
        out = fn()
        t = time.perf_counter() - t
        if i >= warmup:
            seconds.append(t)
    return seconds, out


def result(area, method, implementation, input_name, metrics, params=None, status="ok", note=""):
    return {"area": area, "method": method, "implementation": implementation, "params": params or {},
            "input": input_name, "status": status, "note": note, "metrics": metrics}


def document(tool, argv, inputs, results, reps, warmup=1, seed=0, threads=None, version="0.1.0"):
    return {"schema": SCHEMA, "tool": tool, "version": version,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": [os.path.basename(argv[0])] + list(argv[1:]), "machine": machine(threads),
            "settings": {"warmup": warmup, "reps": reps, "max_seconds": 0, "seed": seed},
            "inputs": inputs, "results": results}


def write(doc, path):
    text = json.dumps(doc, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
