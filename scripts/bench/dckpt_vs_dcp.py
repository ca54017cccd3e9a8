#!/usr/bin/env python3
"""Distributed checkpoints of tensorkit (tk_dckpt_*, through ctypes under mpirun) against
PyTorch Distributed Checkpoint (torch.distributed.checkpoint, gloo, CPU), side by side on
the same sharded state, interleaved over ROUNDS rounds (the order of the sides rotates,
so use a multiple of 3); prints a Markdown table of the medians.

    scripts/bench/dckpt_vs_dcp.py [--gib 1] [--ranks 4] [--restore-ranks 2] [--rounds 6] [--saves 3]
                                  [--compute 0.2] [--lib build/libtkckpt.so] [--dir DIR]

The state: 8 F32 tensors of [R, 4096] (R sized so that the whole state is GIB GiB), each
split by rows over the saving ranks. Measured per round:
- raw disk: one process writes the state's bytes to a new file in 64 MiB writes, then
  fsync, twice: through the page cache and with O_DIRECT. The faster of the two medians
  is the bandwidth every save is compared with;
- save, three ways: tensorkit (tk_dckpt_save_async, which copies the slices before it
  returns), tensorkit with a lazy snapshot (tk_dckpt_save_lazy, which copies them in the
  background) and DCP (dcp.async_save). Each save is one training step: every rank
  starts the save, spends COMPUTE seconds in the step's forward and backward passes
  (asleep: the passes run on an accelerator, the host thread waits for them), waits for
  the snapshot where there is one to wait for (tk_dckpt_snapshot_wait, before the
  optimizer would update the weights), then waits for the save (tk_dckpt_wait; the
  future's result). The stall is the time the step is held up: inside the call that
  starts the save, plus the time blocked in tk_dckpt_snapshot_wait (the largest over the
  ranks). The save time is from the first start to the last rank's return from the wait,
  so aggregate throughput = state bytes / save time. Everyone fsyncs what it writes (tk
  always; DCP's FileSystemWriter with sync_files=True, its default). tensorkit opens its
  directory with tk_dckpt_options.staging_bytes = the rank's share (the staging memory
  allocated and touched at open, so that the first save does not fault it in); the open
  time is reported, since that is where the cost goes;
- restore onto RESTORE_RANKS ranks (tensorkit, then DCP): each rank reads its rows of
  every tensor (a resharding: the step was saved by RANKS ranks). Time of the slowest rank.
The page cache is dropped before each restore when the process may (root), else the
restores read warm data; the table says which.

Needs the bench packages (torch: `make bench-deps`), OpenMPI's mpirun, and a build with
TK_MPI (libtkckpt.so exporting tk_dckpt_*). These machines have 2 cores: 4 ranks
oversubscribe them, so compare the ratios, not the times.
"""
import argparse
import ctypes
import ctypes.util
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TENSORS, COLS = 8, 4096


def rows_for(gib):
    # A multiple of 24 rows, so that 1, 2, 3, 4, 6 or 8 ranks hold equal row blocks:
    # DTensor's Shard(0) describes equal blocks (the last one shorter), and both sides
    # save and restore the same split.
    return max(24, int(gib * (1 << 30)) // (TENSORS * COLS * 4) // 24 * 24)


def my_rows(rows, rank, world):
    return rank * rows // world, (rank + 1) * rows // world


def local_state(rows, rank, world):
    import numpy as np
    first, last = my_rows(rows, rank, world)
    rng = np.random.default_rng(rank)
    return [rng.random((last - first, COLS), dtype=np.float32) for _ in range(TENSORS)]


# ---- tensorkit, one rank (under mpirun) ----

def tk_rank(args):
    import numpy as np
    mpi = ctypes.CDLL(ctypes.util.find_library("mpi"), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(args.lib)
    mpi.MPI_Init(None, None)
    world_comm = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_comm_world")))
    rank, world = ctypes.c_int(), ctypes.c_int()
    mpi.MPI_Comm_rank(world_comm, ctypes.byref(rank))
    mpi.MPI_Comm_size(world_comm, ctypes.byref(world))
    rank, world = rank.value, world.value
    mpi.MPI_Comm_c2f.restype = ctypes.c_int
    fint = mpi.MPI_Comm_c2f(world_comm)
    lib.tk_ckpt_last_error.restype = ctypes.c_char_p
    i64p = ctypes.POINTER(ctypes.c_int64)

    class Slice(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("ndim", ctypes.c_int32),
                    ("global_shape", i64p), ("offsets", i64p), ("shape", i64p),
                    ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64), ("replicated", ctypes.c_int32)]

    def check(status, what):
        if status != 0:
            sys.exit(f"rank {rank}: {what}: {lib.tk_ckpt_last_error().decode()}")

    def dims(values):
        return (ctypes.c_int64 * len(values))(*values)

    def barrier():
        mpi.MPI_Barrier(world_comm)

    rows = rows_for(args.gib)
    first, last = my_rows(rows, rank, world)
    arrays = local_state(rows, rank, world) if args.role != "tk-restore" else \
        [np.empty((last - first, COLS), dtype=np.float32) for _ in range(TENSORS)]
    keep = []  # the ctypes arrays the slices point into
    slices = (Slice * TENSORS)()
    for i, a in enumerate(arrays):
        g, o, s = dims([rows, COLS]), dims([first, 0]), dims([last - first, COLS])
        keep += [g, o, s]
        slices[i] = Slice(f"layer{i}.w".encode(), b"F32", 2, g, o, s, a.ctypes.data, a.nbytes, 0)
    class Options(ctypes.Structure):
        _fields_ = [("timeout_seconds", ctypes.c_double), ("threads", ctypes.c_int32),
                    ("local_dir", ctypes.c_char_p), ("keep_last", ctypes.c_uint32), ("staging_bytes", ctypes.c_uint64)]

    options = Options()
    lib.tk_dckpt_options_init(ctypes.byref(options))
    if args.role != "tk-restore":
        options.staging_bytes = sum(a.nbytes for a in arrays)
    handle = ctypes.c_void_p()
    barrier()
    t_open = time.perf_counter()
    check(lib.tk_dckpt_open(args.ckpt.encode(), fint, ctypes.byref(options), ctypes.byref(handle)), "open")
    open_seconds = time.perf_counter() - t_open
    times = []
    if args.role != "tk-restore":
        start = lib.tk_dckpt_save_lazy if args.role == "tk-lazy-save" else lib.tk_dckpt_save_async
        for step in range(1, args.saves + 1):
            barrier()
            t0 = time.perf_counter()
            check(start(handle, ctypes.c_uint64(step), slices, ctypes.c_size_t(TENSORS)), "save")
            stall = time.perf_counter() - t0
            time.sleep(args.compute)  # the training step's passes
            t1 = time.perf_counter()
            check(lib.tk_dckpt_snapshot_wait(handle), "snapshot_wait")  # before the update
            stall += time.perf_counter() - t1
            check(lib.tk_dckpt_wait(handle, None), "wait")
            times.append((t0, t0 + stall, time.perf_counter()))
    else:
        barrier()
        t0 = time.perf_counter()
        check(lib.tk_dckpt_restore(handle, ctypes.c_uint64(args.saves), slices, ctypes.c_size_t(TENSORS)), "restore")
        times.append((t0, time.perf_counter(), time.perf_counter()))
    check(lib.tk_dckpt_close(handle), "close")
    if args.role == "tk-restore":
        verify_rows(arrays, rows, first, last, args.saved_by, rank)
    report(args, rank, times, open_seconds)
    mpi.MPI_Finalize()


def verify_rows(arrays, rows, first, last, saved_by, rank):
    """Rebuild the saved rows [first, last) from the saving ranks' seeds and compare."""
    import numpy as np
    pieces = [local_state(rows, r, saved_by) for r in range(saved_by)]
    for i, a in enumerate(arrays):
        whole = np.concatenate([p[i] for p in pieces])
        if not np.array_equal(a.view(np.uint32), whole[first:last].view(np.uint32)):
            sys.exit(f"rank {rank}: restored rows of layer{i}.w differ")


def report(args, rank, times, open_seconds=0.0):
    """Write (start, end of the call that starts the operation, end) of each save or
    restore of this rank, and the open's time, to a file of its own (stdout lines
    interleave under mpirun)."""
    with open(os.path.join(args.dir, f"{args.role}.{rank}.json"), "w") as f:
        json.dump({"rank": rank, "times": times, "open": open_seconds}, f)


# ---- DCP, one rank (spawned) ----

def dcp_rank(rank, world, args, store_path):
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    rows = rows_for(args.gib)
    first, last = my_rows(rows, rank, world)
    if args.role == "dcp-save":
        arrays = local_state(rows, rank, world)
    else:
        arrays = [np.empty((last - first, COLS), dtype=np.float32) for _ in range(TENSORS)]
    state = {f"layer{i}.w": DTensor.from_local(torch.from_numpy(a), mesh, [Shard(0)], run_check=False,
                                               shape=torch.Size([rows, COLS]), stride=(COLS, 1))
             for i, a in enumerate(arrays)}
    times = []
    if args.role == "dcp-save":
        for step in range(1, args.saves + 1):
            dist.barrier()
            t0 = time.perf_counter()
            future = dcp.async_save(state, checkpoint_id=os.path.join(args.ckpt, f"step-{step}"))
            t_stall = time.perf_counter()
            time.sleep(args.compute)  # the training step's passes
            future.result()
            times.append((t0, t_stall, time.perf_counter()))
    else:
        dist.barrier()
        t0 = time.perf_counter()
        dcp.load(state, checkpoint_id=os.path.join(args.ckpt, f"step-{args.saves}"))
        times.append((t0, time.perf_counter(), time.perf_counter()))
    dist.barrier()
    if args.role == "dcp-restore":
        verify_rows(arrays, rows, first, last, args.saved_by, rank)
    report(args, rank, times)
    dist.destroy_process_group()


def dcp_main(args):
    import torch.multiprocessing as mp
    store = tempfile.mktemp(prefix="tk-dcp-pg-", dir=args.dir)
    mp.spawn(dcp_rank, args=(args.world, args, store), nprocs=args.world, join=True)


# ---- the driver ----

def run_role(args, role, world, ckpt, saved_by):
    me = os.path.abspath(__file__)
    common = [me, "--role", role, "--gib", str(args.gib), "--lib", args.lib, "--ckpt", ckpt, "--dir", args.dir,
              "--world", str(world), "--saved-by", str(saved_by), "--saves", str(args.saves),
              "--compute", str(args.compute)]
    if role.startswith("tk"):
        cmd = ["mpirun", "-np", str(world), "--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += [sys.executable] + common
    else:
        cmd = [sys.executable] + common
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{role} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    ranks, opens = [], []
    for r in range(world):
        path = os.path.join(args.dir, f"{role}.{r}.json")
        with open(path) as f:
            got = json.load(f)
        ranks.append(got["times"])
        opens.append(got.get("open", 0.0))
        os.remove(path)
    # Per operation: the slowest rank's stall, and from the first start to the last end.
    ops = [{"stall": max(t[k][1] - t[k][0] for t in ranks),
            "time": max(t[k][2] for t in ranks) - min(t[k][0] for t in ranks)} for k in range(len(ranks[0]))]
    ops[0]["open"] = max(opens)
    return ops


def raw_disk(path, nbytes, direct):
    """Seconds for one process to write NBYTES to a new file in 64 MiB writes and fsync
    it: through the page cache, or with O_DIRECT from page-aligned memory."""
    block = mmap.mmap(-1, 64 << 20)  # page-aligned, as O_DIRECT wants
    block.write(os.urandom(len(block)))
    view = memoryview(block)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if direct else 0), 0o600)
    try:
        left = nbytes
        while left > 0:
            left -= os.write(fd, view[:min(left, len(block))])
        os.fsync(fd)
    finally:
        os.close(fd)
    seconds = time.perf_counter() - t0
    view.release()
    block.close()
    os.remove(path)
    return seconds


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--restore-ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--saves", type=int, default=3, help="saves per job: the first, then the steady state")
    p.add_argument("--lib", default="build/libtkckpt.so")
    p.add_argument("--compute", type=float, default=0.2,
                   help="seconds of a training step's passes between starting a save and the update")
    p.add_argument("--dir", default=None)
    p.add_argument("--role", default=None)
    p.add_argument("--ckpt", default=None)
    p.add_argument("--world", type=int, default=0)
    p.add_argument("--saved-by", type=int, default=0)
    args = p.parse_args()
    if args.role in ("tk-save", "tk-lazy-save", "tk-restore"):
        return tk_rank(args)
    if args.role in ("dcp-save", "dcp-restore"):
        return dcp_main(args)

    args.lib = os.path.abspath(args.lib)
    args.dir = tempfile.mkdtemp(prefix="tk-dckpt-bench-", dir=args.dir)
    state_bytes = TENSORS * rows_for(args.gib) * COLS * 4
    results = {k: [] for k in ("raw_cached", "raw_direct", "tk_save", "tk-lazy_save", "dcp_save", "tk_restore",
                                "dcp_restore")}
    cold = True
    try:
        for round_no in range(args.rounds):
            for mode in ("cached", "direct"):
                results[f"raw_{mode}"].append(raw_disk(os.path.join(args.dir, "raw"), state_bytes, mode == "direct"))
            # The order rotates from round to round: data written last is likelier to be
            # in the host's cache under a virtual disk, whatever the guest drops, and a
            # fixed order would favour one side's restore.
            sides = ("tk", "tk-lazy", "dcp")
            order = sides[round_no % 3:] + sides[:round_no % 3]
            for side in order:
                ckpt = os.path.join(args.dir, side)
                shutil.rmtree(ckpt, ignore_errors=True)
                results[f"{side}_save"].append(run_role(args, f"{side}-save", args.ranks, ckpt, args.ranks))
            for side in (x for x in order if x != "tk-lazy"):  # the lazy save writes the same files
                cold &= drop_caches()
                results[f"{side}_restore"].append(
                    run_role(args, f"{side}-restore", args.restore_ranks, os.path.join(args.dir, side), args.ranks)[0])
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)

    med = statistics.median
    # The disk's bandwidth: the faster of the two ways of writing it.
    raw = min(med(results["raw_cached"]), med(results["raw_direct"]))
    raw_mbs = state_bytes / raw / 1e6
    gib = state_bytes / (1 << 30)
    # The first save of a job, and the later ones (the steady state: buffers reused).
    sides = ("tk_save", "tk-lazy_save", "dcp_save")
    first = {k: [ops[0] for ops in results[k]] for k in sides}
    later = {k: [op for ops in results[k] for op in ops[1:]] for k in sides}
    print(f"State {gib:.2f} GiB in {TENSORS} F32 tensors, saved by {args.ranks} ranks ({args.saves} saves a job, "
          f"{args.compute:g} s of passes after each start), restored onto {args.restore_ranks}; medians of "
          f"{args.rounds} interleaved rounds; restores "
          f"{'cold (page cache dropped)' if cold else 'warm (page cache not dropped)'}.\n")
    print("| figure | tensorkit | tensorkit, lazy snapshot | DCP | tensorkit / DCP | lazy / DCP |")
    print("|---|---|---|---|---|---|")
    rows = []

    def row(label, values, fmt, ratios=True):
        cells = [fmt(v) for v in values]
        cells += [f"{values[0] / values[2]:.2f}", f"{values[1] / values[2]:.2f}"] if ratios else ["", ""]
        rows.append((label, *cells))

    for label, sets in (("first save of a job", first), ("later saves", later)):
        if not sets["tk_save"]:
            continue
        stall = [med(op["stall"] for op in sets[k]) for k in sides]
        save = [med(op["time"] for op in sets[k]) for k in sides]
        row(f"{label}: stall, slowest rank (s)", stall, lambda v: f"{v:.3f}")
        row(f"{label}: until committed on every rank (s)", save, lambda v: f"{v:.2f}")
        row(f"{label}: stall / save", [a / b for a, b in zip(stall, save)], lambda v: f"{v:.1%}", False)
        row(f"{label}: aggregate throughput (MB/s, share of raw)", [state_bytes / t / 1e6 for t in save],
            lambda v: f"{v:.0f} ({v / raw_mbs:.0%})", False)
    rows.append(("tensorkit open with staging reserved, slowest rank (s)",
                 f"{med(ops[0]['open'] for ops in results['tk_save']):.3f}", "", "", "", ""))
    a, b = med(r["time"] for r in results["tk_restore"]), med(r["time"] for r in results["dcp_restore"])
    rows.append((f"restore {args.ranks} -> {args.restore_ranks} ranks (s)", f"{a:.2f}", "", f"{b:.2f}", f"{a / b:.2f}", ""))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\nRaw disk, same run: {raw_mbs:.0f} MB/s, the faster of page-cache writes "
          f"({state_bytes / med(results['raw_cached']) / 1e6:.0f} MB/s) and O_DIRECT "
          f"({state_bytes / med(results['raw_direct']) / 1e6:.0f} MB/s), {gib:.2f} GiB with fsync.")
    print("Per round (s): " + json.dumps({k: [round(x, 3) if isinstance(x, float) else
                                              [round(op["time"], 3) for op in x] if isinstance(x, list) else
                                              round(x["time"], 3) for x in v] for k, v in results.items()}))


if __name__ == "__main__":
    main()
