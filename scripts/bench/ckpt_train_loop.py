#!/usr/bin/env python3
"""Checkpoints from a PyTorch training loop: tensorkit.ckpt (async) against
torch.distributed.checkpoint with its FileSystemWriter, sync (dcp.save) and async
(dcp.async_save), on the loop of examples/train_resume.py scaled up; prints the machine
and a Markdown table of medians.

    PYTHONPATH=build/python scripts/refs-python scripts/bench/ckpt_train_loop.py
        [--width 2048] [--layers 8] [--steps 12] [--every 3] [--rounds 3] [--load both|idle|busy]
        [--dir DIR]

The loop: an MLP of LAYERS Linear(WIDTH, WIDTH) layers with AdamW (state = weights and
two moments, F32, one process, CPU), a save of {"model", "optim"} every EVERY steps, the
previous save waited for before the next one starts (as a loop that keeps at most one
save in flight does). Per save:
- stall: the time the loop is held up by checkpointing: inside the call that starts
  the save (tensorkit: the copy into the staging pool; dcp.save: the whole save;
  dcp.async_save: planning and the copy to CPU memory) plus the time blocked waiting for
  the previous save at the next one;
- durable: from the start of the save to its commit (tensorkit: the step directory
  renamed and fsynced; DCP: `.metadata` written, files fsynced, sync_files=True, its
  default), seen by a thread that waits on the handle or future;
- disk: the state's bytes written to one file and fsynced, once per round (the floor
  of "durable");
- step: the median time of a training step with no save in it, and of a step during
  which a save runs in the background (what the writer's CPU and GIL use costs);
- restore: the newest step read back into the live model and optimizer in place
  (tensorkit: Checkpointer.restore; DCP: dcp.load with FileSystemReader), after the
  step's files are dropped from the page cache (posix_fadvise DONTNEED), so both sides
  read from the disk.
Runs are interleaved (A, B, C, A, B, C, ...), ROUNDS rounds, medians over every save of
a side. --load busy runs the same with one CPU-bound process per core beside it (the
equivalent of `yes > /dev/null &` per core), stopped afterwards.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from busy import busy as background_load  # noqa: E402

import torch
import torch.distributed.checkpoint as dcp

import tensorkit
import tensorkit.ckpt


def build(width, layers):
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.GELU()]
    model = torch.nn.Sequential(*mods[:-1])
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for p in model.parameters():  # Adam's state as its first step makes it
        optim.state[p] = {"step": torch.tensor(0.0), "exp_avg": torch.zeros_like(p),
                          "exp_avg_sq": torch.zeros_like(p)}
    return model, optim


def train_step(model, optim, x):
    optim.zero_grad()
    model(x).square().mean().backward()
    optim.step()


def drop_cache(path):
    for root, _, files in os.walk(path):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


class Tk:
    name = "tensorkit.ckpt (async)"

    def __init__(self, root):
        self.dir = os.path.join(root, "tk")
        self.ck = tensorkit.ckpt.Checkpointer(self.dir, keep_last=2)

    def start(self, step, sd):
        h = self.ck.save(step, sd)
        return h, h.wait

    def finish(self):
        self.ck.wait()

    def restore(self, sd):
        self.ck.close()
        drop_cache(self.dir)
        t = time.perf_counter()
        with tensorkit.ckpt.Checkpointer(self.dir, read_only=True) as ck:
            ck.restore(sd)
        return time.perf_counter() - t


class Dcp:
    def __init__(self, root, asynchronous):
        self.root = os.path.join(root, "dcp")
        self.asynchronous = asynchronous
        self.name = "DCP FileSystemWriter, " + ("dcp.async_save" if asynchronous else "dcp.save (sync)")
        self.steps = []

    def start(self, step, sd):
        path = os.path.join(self.root, f"step-{step}")
        self.steps.append(path)
        writer = dcp.FileSystemWriter(path)
        if self.asynchronous:
            fut = dcp.async_save(sd, storage_writer=writer, no_dist=True)
            return fut, fut.result
        dcp.save(sd, storage_writer=writer, no_dist=True)
        return None, lambda: None

    def prune(self):
        # keep_last=2, as tensorkit's side; outside the timed sections
        while len(self.steps) > 2:
            shutil.rmtree(self.steps.pop(0))

    def finish(self):
        pass

    def restore(self, sd):
        drop_cache(self.steps[-1])
        t = time.perf_counter()
        dcp.load(sd, storage_reader=dcp.FileSystemReader(self.steps[-1]), no_dist=True)
        return time.perf_counter() - t


def run_side(side, model, optim, x, steps, every):
    """Trains `steps` steps saving every `every`; returns per-save stalls and durable
    times, step times without and with a save in flight, and the restore time."""
    stalls, durable, quiet, busy = [], [], [], []
    pending = None  # (wait, done-event, start time, stall so far)
    for step in range(1, steps + 1):
        inflight = pending is not None and not pending[1].is_set()
        t = time.perf_counter()
        train_step(model, optim, x)
        (busy if inflight else quiet).append(time.perf_counter() - t)
        if step % every:
            continue
        t0 = time.perf_counter()
        if pending:
            pending[0]()  # the previous save must be committed before the next starts
            pending[1].wait()
            stalls.append(pending[3] + time.perf_counter() - t0)
            durable.append(pending[4][0])
            if isinstance(side, Dcp):
                side.prune()
        t1 = time.perf_counter()
        sd = {"model": model.state_dict(), "optim": optim.state_dict()}
        _, wait = side.start(step, sd)
        stall = time.perf_counter() - t1
        done, when = threading.Event(), [None]

        def watch(wait=wait, t1=t1, done=done, when=when):
            wait()
            when[0] = time.perf_counter() - t1
            done.set()
        threading.Thread(target=watch, daemon=True).start()
        pending = (wait, done, t1, stall, when)
    pending[0]()
    pending[1].wait()
    stalls.append(pending[3])
    durable.append(pending[4][0])
    side.finish()
    sd = {"model": model.state_dict(), "optim": optim.state_dict()}
    return stalls, durable, quiet, busy, side.restore(sd)


def tk_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def machine(root):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
    fs = subprocess.run(["df", "-T", root], capture_output=True, text=True).stdout.splitlines()[-1].split()[1]
    return (f"{cpu}, {os.cpu_count()} cores, {mem / 2**20:.0f} GiB RAM; {fs} file system; "
            f"Linux {platform.release()}; torch {torch.__version__}; tensorkit {tk_commit()}")


def disk_write(root, nbytes):
    """One write of nbytes through the page cache, then fsync: the floor of a durable save."""
    buf = torch.ones(nbytes, dtype=torch.uint8).numpy()
    path = os.path.join(root, "ckpt-loop-disk.bin")
    t = time.perf_counter()
    with open(path, "wb") as f:
        f.write(memoryview(buf))
        os.fsync(f.fileno())
    t = time.perf_counter() - t
    os.unlink(path)
    return t


def median_ms(xs):
    return f"{statistics.median(xs) * 1e3:.0f}" if xs else "-"


def bench(args, load, root):
    model, optim = build(args.width, args.layers)
    x = torch.randn(args.batch, args.width, generator=torch.Generator().manual_seed(1))
    nbytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    nbytes += sum(v.numel() * v.element_size() for s in optim.state.values() for v in s.values())
    with background_load(os.cpu_count() if load == "busy" else 0):
        makers = [lambda r: Tk(r), lambda r: Dcp(r, False), lambda r: Dcp(r, True)]
        results = {}
        disk = []
        for rnd in range(args.rounds):
            disk.append(disk_write(root, nbytes))
            for make in makers:
                d = tempfile.mkdtemp(prefix="ckpt-loop-", dir=root)
                try:
                    side = make(d)
                    r = run_side(side, model, optim, x, args.steps, args.every)
                finally:
                    shutil.rmtree(d)
                acc = results.setdefault(side.name, [[], [], [], [], []])
                for a, v in zip(acc, r):
                    a.extend(v if isinstance(v, list) else [v])
                print(f"  {load} round {rnd + 1} {side.name}: stall {median_ms(r[0])} ms, "
                      f"durable {median_ms(r[1])} ms, restore {r[4] * 1e3:.0f} ms", file=sys.stderr, flush=True)
    print(f"\n{load}: state {nbytes / 1e6:.0f} MB ({args.layers} x Linear({args.width}, {args.width}) "
          f"+ AdamW moments), a save every {args.every} steps, {args.steps} steps, {args.rounds} rounds; "
          f"medians, ms; the same bytes written to one file and fsynced: {median_ms(disk)} ms\n")
    print("| side | stall per save | save durable | step, no save | step, save in flight | restore |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (stalls, durable, quiet, busy, restore) in results.items():
        print(f"| {name} | {median_ms(stalls)} | {median_ms(durable)} | {median_ms(quiet)} | {median_ms(busy)} "
              f"| {median_ms(restore)} |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--load", choices=["both", "idle", "busy"], default="both")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="torch.distributed is disabled")  # single process, as meant
    print(machine(args.dir))
    for load in (["idle", "busy"] if args.load == "both" else [args.load]):
        bench(args, load, args.dir)


if __name__ == "__main__":
    main()
