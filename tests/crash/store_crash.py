#!/usr/bin/env python3
"""Concurrency and crash-consistency proof of the model store (tcompress store).

Concurrent pass: in each round two writers add overlapping sets of files (in different
orders, so that both write the same objects at the same time) while a third process
runs gc and rm; afterwards every listed file must restore byte for byte, no object may
be missing, and gc must leave nothing unreferenced.

Kill pass: `tcompress store add` of a random set of files under new names is SIGKILLed
at a random point of its run (timed against an unkilled add); after every kill, every
listed file must restore byte for byte (a killed add leaves no visible partial
manifest, and no manifest refers to an object that is not complete), and every few
kills gc runs and the check is repeated. The pass ends with gc removing everything the
killed adds left: no temporary files, no unreferenced objects.

  store_crash.py --tool PATH --work DIR [--kills N] [--rounds N] [--seed S]
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file


class Failure(Exception):
    pass


def make_models(root, rng, tensors=12, values=150_000):
    """base, two fine-tunes, a one-in-ten fine-tune, an unrelated model and a blob."""
    bf16 = ml_dtypes.bfloat16
    def weights():
        return {f"layers.{i}.weight": rng.normal(0, 0.02, (values // 100, 100)).astype(bf16) for i in range(tensors)}
    def tuned(model, every):
        return {n: ((w.astype(np.float32) + rng.normal(0, 5e-4, w.shape)).astype(bf16) if i % every == 0 else w)
                for i, (n, w) in enumerate(model.items())}
    os.makedirs(root, exist_ok=True)
    base = weights()
    models = {"base": base, "ft-a": tuned(base, 1), "ft-b": tuned(base, 1), "ft10": tuned(base, 10),
              "other": weights()}
    paths = {}
    for name, m in models.items():
        p = os.path.join(root, name + ".safetensors")
        save_file(m, p)
        paths[name + ".safetensors"] = p
    blob = os.path.join(root, "blob.bin")
    with open(blob, "wb") as f:
        f.write(rng.bytes(300_000))
    paths["blob.bin"] = blob
    return paths


def run(tool, *args, check=True):
    r = subprocess.run([tool, "store", *args], capture_output=True)
    if check and r.returncode != 0:
        raise Failure(f"tcompress store {' '.join(args)}: exit {r.returncode}: {r.stderr.decode().strip()}")
    return r


def listed(tool, store):
    return {f["name"]: f for f in json.loads(run(tool, "ls", "--store", store, "--json", "-").stdout)["files"]}


def stats(tool, store):
    return json.loads(run(tool, "stats", "--store", store, "--json", "-").stdout)


def check_store(tool, store, sources, work):
    """Every listed file restores byte for byte; nothing referred to is missing."""
    out = os.path.join(work, "restored")
    files = listed(tool, store)
    for name in files:
        if name not in sources:
            raise Failure(f"unexpected file listed: {name}")
        run(tool, "get", "--store", store, name, "-f", "-o", out, "-q")
        with open(out, "rb") as a, open(sources[name], "rb") as b:
            if a.read() != b.read():
                raise Failure(f"{name} does not restore byte for byte")
    st = stats(tool, store)
    if st["missing_objects"]:
        raise Failure(f"{st['missing_objects']} objects missing")
    for entry in os.listdir(os.path.join(store, "manifests")):
        if entry == ".lock":  # the name lock of adds (docs/STORE.md), not a manifest
            continue
        if not entry.endswith(".json") or entry.startswith("."):
            raise Failure(f"stray entry in manifests/: {entry}")
    return files


def concurrent_pass(tool, work, paths, rounds, rng):
    store = os.path.join(work, "concurrent")
    names = sorted(paths)
    for r in range(rounds):
        a = names[:]
        b = names[:]
        rng.shuffle(a)
        rng.shuffle(b)
        procs = [subprocess.Popen([tool, "store", "add", "--store", store, "-q", *[paths[n] for n in files]],
                                  stderr=subprocess.PIPE) for files in (a, b)]
        # Meanwhile, remove one file and collect garbage (both take the lock exclusively).
        # The rm may land after both writers have passed the victim (found it already
        # stored, or added it), so the victim may or may not be listed at the end; every
        # other file must be.
        victim = None
        if r > 0:
            victim = rng.choice(names)
            run(tool, "rm", "--store", store, victim, "-q", check=False)
            run(tool, "gc", "--store", store, "-q")
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                raise Failure(f"concurrent add failed: {err.decode().strip()}")
        files = check_store(tool, store, paths, work)
        if set(files) - {victim} != set(names) - {victim}:
            raise Failure(f"round {r}: listed {sorted(files)}, expected all of {names}"
                          + (f" (but perhaps {victim}, removed meanwhile)" if victim else ""))
        run(tool, "gc", "--store", store, "-q")
        st = stats(tool, store)
        if st["unreferenced_objects"]:
            raise Failure(f"round {r}: {st['unreferenced_objects']} unreferenced objects after gc")
        check_store(tool, store, paths, work)
    print(f"concurrent: {rounds} rounds of two writers with rm and gc between them, every file restored")


def timed_add(tool, store, files):
    t0 = time.monotonic()
    subprocess.run([tool, "store", "add", "--store", store, "-q", *files], check=True)
    return time.monotonic() - t0


def kill_pass(tool, work, paths, kills, rng):
    store = os.path.join(work, "killed")
    shutil.rmtree(store, ignore_errors=True)
    names = sorted(paths)
    probe = os.path.join(work, "probe")
    shutil.rmtree(probe, ignore_errors=True)
    span = timed_add(tool, probe, [paths[n] for n in names])
    shutil.rmtree(probe, ignore_errors=True)
    sources = {}
    required = set()
    completed = killed = 0
    per_file = span / len(names)
    for k in range(kills):
        chosen = rng.sample(names, rng.randint(1, len(names)))
        # The first file under a new name, so that a killed add's file is either listed
        # whole or absent; the rest under their own names (replacing earlier copies).
        first = chosen[0]
        commands = [(["--name", f"k{k}/{first}", paths[first]], {f"k{k}/{first}": paths[first]}, per_file)]
        if len(chosen) > 1:
            rest = chosen[1:]
            commands.append(([paths[n] for n in rest], {n: paths[n] for n in rest}, per_file * len(rest)))
        for args, names_added, expected in commands:
            p = subprocess.Popen([tool, "store", "add", "--store", store, "-q", *args], stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, expected))
            p.send_signal(signal.SIGKILL)
            p.wait()
            # A file of a killed add may be listed or not; listed, it must restore. A file
            # of a completed add must be listed.
            sources.update(names_added)
            if p.returncode == 0:
                completed += 1
                required.update(names_added)
            else:
                killed += 1
        files = check_store(tool, store, sources, work)
        if not required <= set(files):
            raise Failure(f"completed adds not listed: {sorted(required - set(files))}")
        if k % 5 == 4:
            run(tool, "gc", "--store", store, "-q")
            check_store(tool, store, sources, work)
    run(tool, "gc", "--store", store, "-q")
    check_store(tool, store, sources, work)
    st = stats(tool, store)
    leftovers = os.listdir(os.path.join(store, "tmp"))
    if st["unreferenced_objects"] or leftovers:
        raise Failure(f"after gc: {st['unreferenced_objects']} unreferenced objects, {len(leftovers)} temporaries")
    print(f"kill: {killed} adds killed, {completed} completed; {len(listed(tool, store))} files listed, "
          f"all restored byte for byte; gc left no temporaries or unreferenced objects")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    paths = make_models(os.path.join(a.work, "models"), np.random.default_rng(a.seed))
    try:
        concurrent_pass(a.tool, a.work, paths, a.rounds, rng)
        kill_pass(a.tool, a.work, paths, a.kills, rng)
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
