#!/usr/bin/env python3
"""Crash-consistency proof of distributed checkpoints under MPI.

Runs examples/mpi_train under `mpirun -np 4` (a step every few milliseconds, a
checkpoint every step, resuming from the newest one), and SIGKILLs either one rank or
the whole job at a random point: shortly after start (open, cleanup), or anywhere in
the save loop. Half the jobs write through a node-local first tier (`--local`): their
steps commit there and are flushed to the shared directory in the background. Half
(drawn apart) take lazy snapshots (`--lazy`): the copy of the state runs in the
background while the next step's passes do. After
every kill:

- `tckpt ls` lists only readable, committed steps (exit 0), and the newest is at
  least the newest step the job reported committed before it died (with tiers: on
  the node-local tier; the shared one lists only committed steps too);
- `tckpt verify` passes on the newest step;
- `mpi_train --check` restores the newest step onto 1, 2 and 4 ranks and compares
  every value bit for bit (the values are a function of step and global index; with
  tiers, through the node-local copy when it is intact); it opens the directories as
  a writer, so afterwards no temporary entry may remain on either tier.

  dckpt_crash.py --train PATH --tckpt PATH --mpirun PATH --work DIR [--kills N] [--seed S]

make test runs 10 kills; `--kills 100` (or more) is the full proof, run by hand.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time


class Failure(Exception):
    pass


def session_pids(sid, name=None):
    """Live pids of session `sid` (called `name` when given): mpirun puts its ranks in
    process groups of their own, but not in another session."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z" and (name is None or comm == name[:15]):
            pids.append(int(entry))
    return pids


def kill_session(sid):
    deadline = time.time() + 30
    while time.time() < deadline:
        pids = session_pids(sid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    raise Failure(f"processes of session {sid} survive SIGKILL")


def mpi(args, n):
    return [args.mpirun, "-np", str(n), "--oversubscribe"]


def run(cmd, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def listed_steps(args, ck, k, what):
    ls = run([args.tckpt, "ls", ck, "--json", "-", "-q"])
    if ls.returncode != 0:
        raise Failure(f"kill {k} ({what}): tckpt ls {ck} failed: {ls.stderr.strip()}")
    listed = json.loads(ls.stdout)["steps"]
    if any(s.get("state") != "committed" for s in listed):
        raise Failure(f"kill {k}: a listed step is not committed: {ls.stdout}")
    return [s["step"] for s in listed]


def one_kill(args, rng, ck, k):
    early = rng.random() < 0.2
    delay = rng.uniform(0.05, 0.5) if early else rng.uniform(0.5, 2.5)
    whole_job = rng.random() < 0.5
    local = ck + "-local" if rng.random() < 0.5 else None
    tier = ["--local", local] if local else []
    lazy = ["--lazy"] if rng.random() < 0.5 else []  # the copy taken in the background
    proc = subprocess.Popen(mpi(args, 4) + [args.train, "--dir", ck, "--steps", "100000000", "--every", "1",
                                            "--sleep-ms", "2", "--timeout", "20"] + tier + lazy,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    time.sleep(delay)
    mode = (", tiers" if local else "") + (", lazy" if lazy else "")
    what = "whole job" + mode
    if not whole_job:
        ranks = session_pids(proc.pid, os.path.basename(args.train))
        if ranks:
            victim = rng.choice(ranks)
            os.kill(victim, signal.SIGKILL)
            what = f"rank pid {victim}" + mode
            time.sleep(0.3)  # what the others do next (mpirun tears the job down)
    kill_session(proc.pid)
    proc.wait()
    reader.join(timeout=10)
    committed = [int(m.group(1)) for m in (re.match(r"committed step (\d+)", l) for l in lines) if m]
    reported = max(committed) if committed else None

    if not os.path.isdir(ck):  # killed before rank 0 created it
        if reported is not None:
            raise Failure(f"kill {k}: step {reported} reported committed, no checkpoint directory")
        return what, delay, None, False
    steps = listed_steps(args, ck, k, what)
    newest = max(steps) if steps else None
    first_tier = steps
    if local:
        first_tier = listed_steps(args, local, k, what) if os.path.isdir(local) else []
    newest_first = max(first_tier) if first_tier else None
    if reported is not None and (newest_first is None or newest_first < reported):
        raise Failure(f"kill {k} ({what}): step {reported} was reported committed, newest listed is {newest_first}")
    tiers = [ck] + ([local] if local and os.path.isdir(local) else [])
    partial = any(".tmp-" in e for d in tiers for e in os.listdir(d))  # the kill hit a save in flight
    if newest is None:
        return what, delay, None, partial
    verify = run([args.tckpt, "verify", ck, "--step", str(newest), "-q"])
    if verify.returncode != 0:
        raise Failure(f"kill {k}: tckpt verify --step {newest} failed: {verify.stderr.strip()}")
    for n in (1, 2, 4):
        check = run(mpi(args, n) + [args.train, "--dir", ck, "--check"] + tier)
        want = f"checked step {newest} on {n} ranks"
        if check.returncode != 0 or want not in check.stdout:
            raise Failure(f"kill {k}: restore onto {n} ranks: rc {check.returncode}, {check.stdout.strip()} "
                          f"{check.stderr.strip()[:400]} (wanted '{want}')")
    leftovers = [e for d in tiers for e in os.listdir(d) if ".tmp-" in e or ".del-" in e]
    if leftovers:
        raise Failure(f"kill {k}: leftovers after a writer opened the directory: {leftovers}")
    return what, delay, newest, partial


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--tckpt", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rng = random.Random(args.seed)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    ck = os.path.join(args.work, "ck")
    t0 = time.time()
    partials = tiered = lazy = 0
    try:
        for k in range(1, args.kills + 1):
            what, delay, newest, partial = one_kill(args, rng, ck, k)
            partials += partial
            tiered += ", tiers" in what
            lazy += ", lazy" in what
            state = "no step yet" if newest is None else f"newest step {newest} restored onto 1, 2 and 4 ranks"
            print(f"kill {k}: {what} at {delay:.2f}s{', step in flight' if partial else ''}: {state}", flush=True)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print(f"{args.kills} kills ({partials} during a save, partial step left behind; {tiered} with tiers, "
          f"{lazy} with lazy snapshots), every check passed "
          f"({time.time() - t0:.0f} s)")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
