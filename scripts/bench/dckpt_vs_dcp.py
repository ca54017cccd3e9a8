#!/usr/bin/env python3
"""Distributed checkpoints of tensorkit (tk_dckpt_*, through ctypes under mpirun) against
PyTorch Distributed Checkpoint (torch.distributed.checkpoint, gloo, CPU), side by side on
the same sharded state, interleaved A,B,B,A over ROUNDS rounds (the order alternates,
so use an even number); prints a Markdown table of the medians.

    scripts/bench/dckpt_vs_dcp.py [--gib 1] [--ranks 4] [--restore-ranks 2] [--rounds 4] [--saves 3]
                                  [--lib build/libtkckpt.so] [--dir DIR]

The state: 8 F32 tensors of [R, 4096] (R sized so that the whole state is GIB GiB), each
split by rows over the saving ranks. Measured per round, in this order:
- raw disk: one process writes the state's bytes to a file in 64 MiB writes, then
  fsync; the bandwidth every save is compared with;
- save (tensorkit, then DCP): every rank starts an asynchronous save (tk_dckpt_save_async;
  dcp.async_save) and waits for it (tk_dckpt_wait; the future's result). The stall is the
  time inside the call that starts the save (the largest over the ranks); the save time is
  from the first start to the last rank's return from the wait, so aggregate throughput =
  state bytes / save time. Both fsync what they write (tk always; DCP's FileSystemWriter
  with sync_files=True, its default);
  tensorkit opens its directory with tk_dckpt_options.staging_bytes = the rank's share
  (the staging memory allocated and touched at open, so that the first save does not
  fault it in); the open time is reported, since that is where the cost goes;
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
    arrays = local_state(rows, rank, world) if args.role == "tk-save" else \
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
    if args.role == "tk-save":
        options.staging_bytes = sum(a.nbytes for a in arrays)
    handle = ctypes.c_void_p()
    barrier()
    t_open = time.perf_counter()
    check(lib.tk_dckpt_open(args.ckpt.encode(), fint, ctypes.byref(options), ctypes.byref(handle)), "open")
    open_seconds = time.perf_counter() - t_open
    times = []
    if args.role == "tk-save":
        for step in range(1, args.saves + 1):
            barrier()
            t0 = time.perf_counter()
            check(lib.tk_dckpt_save_async(handle, ctypes.c_uint64(step), slices, ctypes.c_size_t(TENSORS)), "save_async")
            t_stall = time.perf_counter()
            check(lib.tk_dckpt_wait(handle, None), "wait")
            times.append((t0, t_stall, time.perf_counter()))
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
              "--world", str(world), "--saved-by", str(saved_by), "--saves", str(args.saves)]
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


def raw_disk(path, nbytes):
    block = os.urandom(64 << 20)
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        left = nbytes
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
        f.flush()
        os.fsync(f.fileno())
    seconds = time.perf_counter() - t0
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
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--saves", type=int, default=3, help="saves per job: the first, then the steady state")
    p.add_argument("--lib", default="build/libtkckpt.so")
    p.add_argument("--dir", default=None)
    p.add_argument("--role", default=None)
    p.add_argument("--ckpt", default=None)
    p.add_argument("--world", type=int, default=0)
    p.add_argument("--saved-by", type=int, default=0)
    args = p.parse_args()
    if args.role in ("tk-save", "tk-restore"):
        return tk_rank(args)
    if args.role in ("dcp-save", "dcp-restore"):
        return dcp_main(args)

    args.lib = os.path.abspath(args.lib)
    args.dir = tempfile.mkdtemp(prefix="tk-dckpt-bench-", dir=args.dir)
    state_bytes = TENSORS * rows_for(args.gib) * COLS * 4
    results = {k: [] for k in ("raw", "tk_save", "dcp_save", "tk_restore", "dcp_restore")}
    cold = True
    try:
        for round_no in range(args.rounds):
            results["raw"].append(raw_disk(os.path.join(args.dir, "raw"), state_bytes))
            # Which side goes first alternates from round to round: data written last is
            # likelier to be in the host's cache under a virtual disk, whatever the guest
            # drops, and a fixed order would favour one side's restore.
            order = ("tk", "dcp") if round_no % 2 == 0 else ("dcp", "tk")
            for side in order:
                ckpt = os.path.join(args.dir, side)
                shutil.rmtree(ckpt, ignore_errors=True)
                results[f"{side}_save"].append(run_role(args, f"{side}-save", args.ranks, ckpt, args.ranks))
            for side in order:
                cold &= drop_caches()
                results[f"{side}_restore"].append(
                    run_role(args, f"{side}-restore", args.restore_ranks, os.path.join(args.dir, side), args.ranks)[0])
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)

    med = statistics.median
    raw = med(results["raw"])
    raw_mbs = state_bytes / raw / 1e6
    gib = state_bytes / (1 << 30)
    # The first save of a job, and the later ones (the steady state: buffers reused).
    first = {k: [ops[0] for ops in results[k]] for k in ("tk_save", "dcp_save")}
    later = {k: [op for ops in results[k] for op in ops[1:]] for k in ("tk_save", "dcp_save")}
    print(f"State {gib:.2f} GiB in {TENSORS} F32 tensors, saved by {args.ranks} ranks ({args.saves} saves a job), "
          f"restored onto {args.restore_ranks}; medians of {args.rounds} interleaved rounds; restores "
          f"{'cold (page cache dropped)' if cold else 'warm (page cache not dropped)'}.\n")
    print("| figure | tensorkit | DCP | tensorkit / DCP |")
    print("|---|---|---|---|")
    rows = []
    for label, sets in (("first save of a job", first), ("later saves", later)):
        if not sets["tk_save"]:
            continue
        a, b = (med(op["stall"] for op in sets[k]) for k in ("tk_save", "dcp_save"))
        rows.append((f"{label}: stall, slowest rank (s)", f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}"))
        a2, b2 = (med(op["time"] for op in sets[k]) for k in ("tk_save", "dcp_save"))
        rows.append((f"{label}: until committed on every rank (s)", f"{a2:.2f}", f"{b2:.2f}", f"{a2 / b2:.2f}"))
        rows.append((f"{label}: stall / save", f"{a / a2:.1%}", f"{b / b2:.1%}", ""))
        rows.append((f"{label}: aggregate throughput (MB/s, share of raw)",
                     f"{state_bytes / a2 / 1e6:.0f} ({state_bytes / a2 / 1e6 / raw_mbs:.0%})",
                     f"{state_bytes / b2 / 1e6:.0f} ({state_bytes / b2 / 1e6 / raw_mbs:.0%})", f"{b2 / a2:.2f}"))
    rows.append(("tensorkit open with staging reserved, slowest rank (s)",
                 f"{med(ops[0]['open'] for ops in results['tk_save']):.3f}", "", ""))
    a, b = med(r["time"] for r in results["tk_restore"]), med(r["time"] for r in results["dcp_restore"])
    rows.append((f"restore {args.ranks} -> {args.restore_ranks} ranks (s)", f"{a:.2f}", f"{b:.2f}", f"{a / b:.2f}"))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\nRaw disk, same run: {raw_mbs:.0f} MB/s ({raw:.2f} s for {gib:.2f} GiB with fsync).")
    print("Per round (s): " + json.dumps({k: [round(x, 3) if isinstance(x, float) else
                                              [round(op["time"], 3) for op in x] if isinstance(x, list) else
                                              round(x["time"], 3) for x in v] for k, v in results.items()}))


if __name__ == "__main__":
    main()
