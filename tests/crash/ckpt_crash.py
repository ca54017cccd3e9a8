#!/usr/bin/env python3
"""Crash-consistency proof of the checkpoint engine.

Kill pass: runs tk_ckpt_crash_writer (saving steps in a loop) and SIGKILLs it at
random points, then runs its `check` mode, which must find the newest committed step
restored bit for bit, every listed step verified and nothing partial listed. Kills
are timed three ways: shortly after start (open, cleanup of temp directories), at a
uniformly random point of a save cycle, and just after a chosen file-system call
(a write, fsync or rename the engine announces to the fault hook; the writer records
the last one in a memory-mapped trace file, which the driver polls). Configurations
rotate through plain, incremental, lossless, sharded, durable tier and retention; each
block of kills uses fresh directories and ends with a clean run whose result must be
settled (retention applied, durable tier caught up).

Fault pass: TK_CKPT_FAULT=write:N, fsync:N, rename:N (EIO, and ENOSPC for even N)
fails the N-th such call of a writer that saves one step; the save must fail with an
error (or, for a call outside the save, succeed), the failed step must not be listed,
and every earlier step must still check.

  ckpt_crash.py --writer PATH --work DIR [--kills N] [--seed S] [--fault-limit N]
"""

import argparse
import collections
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time

SEED_ARGS = lambda seed: ["--seed", str(seed)]


def configs(block_dir):
    durable = os.path.join(block_dir, "durable")
    return {
        "plain": [],
        "incremental": ["--incremental", "--full-every", "4"],
        "lossless": ["--compression", "lossless", "--shard-bytes", str(2 << 20)],
        "incremental-lossless": ["--incremental", "--full-every", "3", "--compression", "lossless"],
        "durable": ["--durable", durable, "--incremental", "--full-every", "3", "--keep-last", "4"],
        "retention": ["--incremental", "--full-every", "3", "--keep-last", "3", "--keep-every", "5"],
    }


CONFIG_ORDER = ["plain", "incremental", "lossless", "incremental-lossless", "durable", "retention"]


class Failure(Exception):
    pass


def check_args(cfg_args):
    """The writer options that check needs too."""
    out = []
    for flag in ("--durable", "--keep-last", "--keep-every"):
        if flag in cfg_args:
            i = cfg_args.index(flag)
            out += cfg_args[i:i + 2]
    return out


class Trace:
    """The writer's memory-mapped record of its last two file-system calls."""

    def __init__(self, path, main_dir, durable_dir):
        self.path = path
        self.main_dir = main_dir
        self.durable_dir = durable_dir

    def read(self):
        try:
            with open(self.path, "rb") as f:
                raw = f.read(4096)
        except OSError:
            return None
        lines = raw.split(b"\0", 1)[0].decode(errors="replace").split("\n")
        parts = lines[0].split(" ", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            return None
        phase = self.phase(parts[1], parts[2])
        previous = lines[1].split(" ", 1) if len(lines) > 1 else []
        if phase.endswith(" .") and len(previous) == 2:
            # A directory fsync follows several different calls; name the one before it.
            phase += " after " + self.phase(*previous).split(" ", 1)[1]
        return int(parts[0]), phase

    def phase(self, op, path):
        tier, rel = "?", path
        for name, base in (("durable", self.durable_dir), ("main", self.main_dir)):
            if base and (path == base or path.startswith(base + "/")):
                tier, rel = name, os.path.relpath(path, base)
                break
        rel = re.sub(r"\.(tmp|del)[-.][^/]*", r".\1", rel)
        rel = re.sub(r"\d+", "N", rel)
        return f"{tier} {op} {rel}"


class Writer:
    def __init__(self, exe, main_dir, seed, cfg_args, trace_path=None, steps=0, env=None):
        cmd = [exe, "write", main_dir] + SEED_ARGS(seed) + cfg_args
        if steps:
            cmd += ["--steps", str(steps)]
        if trace_path:
            cmd += ["--trace", trace_path]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.started = time.monotonic()
        self.lines = []  # (time, text)
        self._buf = b""

    def poll_lines(self, timeout):
        """Read whatever stdout lines arrive within `timeout` seconds."""
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout))
        if not ready:
            return False
        chunk = os.read(fd, 65536)
        if not chunk:
            return None  # EOF: the writer exited
        self._buf += chunk
        now = time.monotonic()
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            self.lines.append((now, line.decode()))
        return True

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.finish()

    def finish(self, timeout=None):
        out, err = self.proc.communicate(timeout=timeout)
        now = time.monotonic()
        self._buf += out
        for line in self._buf.decode().splitlines():
            self.lines.append((now, line))
        self._buf = b""
        self.stderr = err.decode(errors="replace")
        return self.proc.returncode

    def committed(self):
        return [int(t.split()[1]) for _, t in self.lines if t.startswith("committed ")]

    def commit_times(self):
        return [when for when, t in self.lines if t.startswith("committed ")]

    def opened(self):
        return any(t.startswith("start ") for _, t in self.lines)

    def failed_step(self):
        for _, t in self.lines:
            if t.startswith("failed "):
                return int(t.split()[1])
        return None


def run_check(args, main_dir, cfg_args, min_step=None, max_step=None, absent=(), settled=False, all_steps=False):
    cmd = [args.writer, "check", main_dir] + SEED_ARGS(args.seed) + check_args(cfg_args)
    if min_step:
        cmd += ["--min-step", str(min_step)]
    if max_step is not None:
        cmd += ["--max-step", str(max_step)]
    for s in absent:
        cmd += ["--absent", str(s)]
    if settled:
        cmd.append("--settled")
    if all_steps:
        cmd.append("--all")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise Failure(f"check failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
    fields = dict(kv.split("=", 1) for kv in r.stdout.split())
    num = lambda v: None if v == "-" else int(v)
    temp = set() if fields["temp"] == "-" else set(fields["temp"].split(","))
    return num(fields["latest"]), num(fields["durable_latest"]), temp


def kill_at_random_point(w, rng, trace, period):
    """Let writer `w` run and SIGKILL it; returns how the moment was chosen."""
    mode = rng.choices(["early", "cycle", "call"], weights=[1, 4, 5])[0]
    if mode == "early":
        deadline = time.monotonic() + rng.uniform(0.0, 0.15)
        while w.poll_lines(deadline - time.monotonic()):
            pass
    elif mode == "cycle":
        # A uniformly random moment of the cycle after the k-th commit.
        k = rng.randint(0, 2)
        t0 = time.monotonic()
        while len(w.committed()) < k and time.monotonic() - t0 < 30:
            if w.poll_lines(0.5) is None:
                break
        deadline = time.monotonic() + rng.uniform(0.0, period)
        while w.poll_lines(deadline - time.monotonic()):
            pass
    else:
        # Just after a chosen call: watch the calls of one cycle, pick one kind of them,
        # kill 0-3 ms after the engine next announces it.
        seen = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            if w.poll_lines(0.0003) is None:
                break
            rec = trace.read()
            if rec and rec[1] not in seen:
                seen.append(rec[1])
            if len(w.committed()) >= 1 and seen:
                break
        if seen:
            target = rng.choice(seen)
            skip = rng.randint(0, 1)  # sometimes the next cycle's occurrence
            last_seq = -1
            t0 = time.monotonic()
            while time.monotonic() - t0 < 10:
                if w.poll_lines(0.0002) is None:
                    break
                rec = trace.read()
                if rec and rec[0] != last_seq:
                    last_seq = rec[0]
                    if rec[1] == target:
                        if skip == 0:
                            time.sleep(rng.uniform(0.0, 0.003))
                            break
                        skip -= 1
    w.kill()
    return mode


def kill_block(args, rng, block, cfg_name, kills, stats):
    block_dir = os.path.join(args.work, f"block-{block:03d}-{cfg_name}")
    shutil.rmtree(block_dir, ignore_errors=True)
    os.makedirs(block_dir)
    cfg_args = configs(block_dir)[cfg_name]
    main_dir = os.path.join(block_dir, "ckpt")
    durable_dir = os.path.join(block_dir, "durable") if "--durable" in cfg_args else None
    trace = Trace(os.path.join(block_dir, "trace"), main_dir, durable_dir)
    floor = 0  # every step up to here was committed (reported by a writer or seen by check)
    durable_floor = 0
    temp_before = set()
    period = stats["period"].get(cfg_name, 0.4)
    for _ in range(kills):
        if os.path.exists(trace.path):
            os.unlink(trace.path)
        w = Writer(args.writer, main_dir, args.seed, cfg_args, trace_path=trace.path)
        mode = kill_at_random_point(w, rng, trace, period)
        rc = w.proc.returncode
        if rc != -signal.SIGKILL:
            raise Failure(f"{cfg_name}: writer ended by itself (exit {rc}) before the kill:\n{w.stderr.strip()}")
        times = w.commit_times()
        if len(times) >= 2:
            period = 0.7 * period + 0.3 * (times[-1] - times[0]) / (len(times) - 1)
        rec = trace.read()
        phase = rec[1] if rec else "before the first call"
        stats["phases"][phase] += 1
        stats["modes"][mode] += 1
        stats["kills"] += 1
        stats["commits"] += len(w.committed())
        reported = max(w.committed(), default=0)
        try:
            latest, durable_latest, temp = run_check(args, main_dir, cfg_args, min_step=max(floor, reported),
                                                     max_step=max(floor, reported) + 1)
        except Failure as e:
            raise Failure(f"{cfg_name}, kill {stats['kills']} ({mode}, last call: {phase}): {e}")
        if w.opened() and temp_before & temp:
            raise Failure(f"{cfg_name}: temp directories left by an earlier kill survived a writer's open: "
                          f"{sorted(temp_before & temp)}")
        if durable_latest is not None and durable_latest < durable_floor:
            raise Failure(f"{cfg_name}: durable tier went back from step {durable_floor} to {durable_latest}")
        stats["temp_dirs"] += len(temp - temp_before)
        temp_before = temp
        floor = latest or 0
        durable_floor = durable_latest or 0
    stats["period"][cfg_name] = period

    # A clean run after the kills: the writer recovers, and on exit retention is applied
    # and the durable tier has caught up.
    w = Writer(args.writer, main_dir, args.seed, cfg_args, steps=2)
    rc = w.finish(timeout=300)
    if rc != 0:
        raise Failure(f"{cfg_name}: clean run after the kills failed (exit {rc}):\n{w.stderr.strip()}")
    latest, _, temp = run_check(args, main_dir, cfg_args, min_step=max(w.committed()), settled=True, all_steps=True)
    if temp:
        raise Failure(f"{cfg_name}: temp directories survive a clean run: {sorted(temp)}")
    if not args.keep:
        shutil.rmtree(block_dir, ignore_errors=True)


FAULT_CONFIGS_FULL = ["plain", "incremental", "lossless", "retention", "durable"]
FAULT_CONFIGS_SHORT = ["plain", "incremental"]


def fault_config(args, cfg_name, limit, stats):
    block_dir = os.path.join(args.work, f"fault-{cfg_name}")
    shutil.rmtree(block_dir, ignore_errors=True)
    os.makedirs(block_dir)
    cfg_args = configs(block_dir)[cfg_name]
    main_dir = os.path.join(block_dir, "ckpt")
    env = dict(os.environ)
    env.pop("TK_CKPT_FAULT", None)
    w = Writer(args.writer, main_dir, args.seed, cfg_args, steps=2, env=env)
    if w.finish(timeout=300) != 0:
        raise Failure(f"fault {cfg_name}: preparing two steps failed:\n{w.stderr.strip()}")
    floor = max(w.committed())
    for point in ("write", "fsync", "rename"):
        clean_in_a_row = 0
        for n in range(1, limit + 1):
            spec = f"{point}:{n}" + (":28" if n % 2 == 0 else "")
            env["TK_CKPT_FAULT"] = spec
            w = Writer(args.writer, main_dir, args.seed, cfg_args, steps=1, env=env)
            rc = w.finish(timeout=300)
            failed = w.failed_step()
            where = f"fault {cfg_name} TK_CKPT_FAULT={spec}"
            if rc < 0:
                raise Failure(f"{where}: writer died of signal {-rc}:\n{w.stderr.strip()}")
            if rc == 0:
                outcome = "save succeeded"
            elif failed is not None:
                outcome = "save failed"
                if ": I/O: " not in w.stderr:
                    raise Failure(f"{where}: the save failed with another error than I/O:\n{w.stderr.strip()}")
            elif not w.opened():
                outcome = "open failed"
            else:
                outcome = "flush failed"
            stats["fault_outcomes"][f"{point} {outcome}"] += 1
            reported = max(w.committed(), default=0)
            try:
                latest, _, _ = run_check(args, main_dir, cfg_args, min_step=max(floor, reported),
                                         max_step=max(floor, reported) + 1,
                                         absent=[failed] if failed is not None else [])
            except Failure as e:
                raise Failure(f"{where} ({outcome}): {e}")
            floor = latest or 0
            clean_in_a_row = clean_in_a_row + 1 if outcome == "save succeeded" else 0
            if clean_in_a_row >= 3:
                break  # N is past every such call of one save
    # A save without faults succeeds after all of them.
    env.pop("TK_CKPT_FAULT", None)
    w = Writer(args.writer, main_dir, args.seed, cfg_args, steps=1, env=env)
    if w.finish(timeout=300) != 0:
        raise Failure(f"fault {cfg_name}: a save without faults failed afterwards:\n{w.stderr.strip()}")
    run_check(args, main_dir, cfg_args, min_step=max(w.committed()), settled=True, all_steps=True)
    if not args.keep:
        shutil.rmtree(block_dir, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writer", required=True, help="path of tk_ckpt_crash_writer")
    p.add_argument("--work", required=True, help="scratch directory (emptied first)")
    p.add_argument("--kills", type=int, default=int(os.environ.get("TK_CRASH_KILLS", "40")))
    p.add_argument("--kills-per-block", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fault-limit", type=int, default=None,
                   help="largest N tried per call kind (default: 8 for short runs, 200 for 200+ kills)")
    p.add_argument("--configs", default=",".join(CONFIG_ORDER),
                   help="comma-separated configurations to rotate through (default: all)")
    p.add_argument("--keep", action="store_true", help="keep the directories of passing blocks")
    args = p.parse_args()
    args.configs = args.configs.split(",")
    unknown = set(args.configs) - set(CONFIG_ORDER)
    if unknown:
        p.error(f"unknown configurations: {', '.join(sorted(unknown))}")
    full = args.kills >= 200
    if args.fault_limit is None:
        args.fault_limit = 200 if full else 8
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rng = random.Random(args.seed)
    stats = {"kills": 0, "commits": 0, "temp_dirs": 0, "period": {}, "phases": collections.Counter(),
             "modes": collections.Counter(), "fault_outcomes": collections.Counter()}
    t0 = time.monotonic()
    try:
        block = 0
        while stats["kills"] < args.kills:
            cfg = args.configs[block % len(args.configs)]
            kill_block(args, rng, block, cfg, min(args.kills_per_block, args.kills - stats["kills"]), stats)
            block += 1
        t_kills = time.monotonic() - t0
        for cfg in FAULT_CONFIGS_FULL if full else FAULT_CONFIGS_SHORT:
            if cfg in args.configs:
                fault_config(args, cfg, args.fault_limit, stats)
    except Failure as e:
        print(f"ckpt_crash: FAILED after {stats['kills']} kills (seed {args.seed}): {e}", file=sys.stderr)
        print(f"ckpt_crash: directories kept under {args.work}", file=sys.stderr)
        return 1
    total = time.monotonic() - t0
    print(f"ckpt_crash: {stats['kills']} kills in {t_kills:.1f} s ({stats['commits']} steps committed between "
          f"kills, {stats['temp_dirs']} temp directories left by kills), all checks passed")
    print("kill timing: " + ", ".join(f"{m} {c}" for m, c in sorted(stats["modes"].items())))
    print("last file-system call before each kill:")
    for phase, count in stats["phases"].most_common():
        print(f"  {count:4d}  {phase}")
    print("fault injection: " + ", ".join(f"{k} {c}" for k, c in sorted(stats["fault_outcomes"].items())))
    print(f"ckpt_crash: passed in {total:.1f} s")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
