#!/usr/bin/env python3
"""Checkpoint stall from GPU memory: libtkckpt's C API given the device pointers of torch
CUDA tensors, against a synchronous torch.save of the same tensors (+ fsync).

  ckpt_stall.py --lib BUILD/libtkckpt.so --json OUT.json [--gib 2] [--rounds 5] [--work DIR]

The state is model-like: an embedding, then transformer layers of bf16 weights (QKV,
output, MLP up and down) with their small biases and norm weights, sized to about --gib
GiB in all. Per round, interleaved A,B (tkckpt, then torch.save), each arm after a
torch.cuda.synchronize() and an os.sync() outside its time:
  tkckpt      stall: until tk_ckpt_save_async returns (copies queued, nothing waited for);
              gpu_blocked: until the default stream is free again (it waits on the device
              for the device-to-host copies, as the next optimizer step would);
              commit: until tk_ckpt_wait returns (step written, fsynced and renamed).
  torch.save  stall = commit: torch.save to a file, then fsync; the caller waits for all.
One warm-up save of each arm comes first (tkckpt's first save allocates and pins its
staging memory). Prints the medians (and ranges) and writes them, with every round's
figures and the machine, as JSON. After the rounds, the newest tkckpt step is verified
and restored into fresh CUDA tensors through the C API and compared with the state.
Exits 5 with one line when torch or a CUDA device is missing.
"""
import argparse
import ctypes
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tkckpt_ctypes import Options, SaveStats, Tensor, load_library  # noqa: E402

OK = 0


def fail(message):
    print(f"ckpt_stall.py: {message}", file=sys.stderr)
    sys.exit(5)


def call(lib, name, *args):
    status = getattr(lib, name)(*args)
    if status != OK:
        fail(f"{name}: {lib.tk_ckpt_last_error().decode()} (status {status})")


def model_state(torch, gib, hidden=2048, vocab=32000):
    """Named bf16 CUDA tensors of about `gib` GiB, shaped as a transformer's."""
    g = torch.Generator(device="cuda").manual_seed(0)

    def param(*shape):
        return torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32).to(torch.bfloat16)

    state = {"embed.weight": param(vocab, hidden)}
    per_layer = 2 * (12 * hidden * hidden + 13 * hidden)
    layers = max(1, int((gib * 2**30 - 2 * vocab * hidden) // per_layer))
    for i in range(layers):
        p = f"layers.{i}."
        state[p + "norm1.weight"] = param(hidden)
        state[p + "norm1.bias"] = param(hidden)
        state[p + "attn.qkv.weight"] = param(3 * hidden, hidden)
        state[p + "attn.qkv.bias"] = param(3 * hidden)
        state[p + "attn.out.weight"] = param(hidden, hidden)
        state[p + "attn.out.bias"] = param(hidden)
        state[p + "norm2.weight"] = param(hidden)
        state[p + "norm2.bias"] = param(hidden)
        state[p + "mlp.up.weight"] = param(4 * hidden, hidden)
        state[p + "mlp.up.bias"] = param(4 * hidden)
        state[p + "mlp.down.weight"] = param(hidden, 4 * hidden)
        state[p + "mlp.down.bias"] = param(hidden)
    state["final_norm.weight"] = param(hidden)
    return state


DTYPE_NAMES = {"torch.bfloat16": b"BF16", "torch.float32": b"F32"}


def descriptors(state):
    """tk_ckpt_tensor descriptors of the tensors' device memory (kept alive by `keep`)."""
    keep, out = [], (Tensor * len(state))()
    for i, (name, t) in enumerate(state.items()):
        shape = (ctypes.c_int64 * t.dim())(*t.shape)
        encoded = name.encode()
        keep += [shape, encoded]
        out[i] = Tensor(encoded, DTYPE_NAMES[str(t.dtype)], t.dim(), shape, t.data_ptr(),
                        t.numel() * t.element_size())
    return out, keep


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def tkckpt_round(torch, lib, ckpt, step, tensors):
    torch.cuda.synchronize()
    handle = ctypes.c_uint64()
    t0 = time.perf_counter()
    call(lib, "tk_ckpt_save_async", ckpt, step, tensors, len(tensors), None, None, 0, 0, ctypes.byref(handle))
    stall = time.perf_counter() - t0
    torch.cuda.current_stream().synchronize()
    gpu_blocked = time.perf_counter() - t0
    stats = SaveStats()
    call(lib, "tk_ckpt_wait", ckpt, handle, ctypes.byref(stats))
    commit = time.perf_counter() - t0
    return {"stall_s": stall, "gpu_blocked_s": gpu_blocked, "commit_s": commit,
            "library_stall_s": stats.stall_seconds, "write_s": stats.write_seconds}


def torch_save_round(torch, state, path):
    if os.path.exists(path):
        os.remove(path)
    os.sync()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.save(state, path)
    fsync_path(path)
    fsync_path(os.path.dirname(path))
    elapsed = time.perf_counter() - t0
    return {"stall_s": elapsed, "gpu_blocked_s": elapsed, "commit_s": elapsed}


def check_restore(torch, lib, ckpt, step, state):
    problems = ctypes.c_uint64()
    first = ctypes.create_string_buffer(512)
    call(lib, "tk_ckpt_verify", ckpt, step, ctypes.byref(problems), first, len(first))
    fresh = {name: torch.empty_like(t) for name, t in state.items()}
    targets, keep = descriptors(fresh)
    call(lib, "tk_ckpt_restore_into", ckpt, step, targets, len(targets))
    torch.cuda.synchronize()
    for name, t in state.items():
        if not torch.equal(fresh[name], t):
            fail(f"restored tensor '{name}' differs from the saved one")


KEYS = ("stall_s", "gpu_blocked_s", "commit_s")


def summary(rounds, key):
    values = [r[key] for r in rounds]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def machine(torch):
    p = torch.cuda.get_device_properties(0)
    return {"gpu": p.name, "gpu_memory_gib": round(p.total_memory / 2**30, 1), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cpus": os.cpu_count(), "python": platform.python_version(),
            "kernel": platform.release()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True, help="path of libtkckpt.so (a CUDA build)")
    ap.add_argument("--json", required=True, help="where to write the results")
    ap.add_argument("--gib", type=float, default=2.0, help="state size in GiB (1 to 4 is the aim)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of A,B (at least 3)")
    ap.add_argument("--work", help="directory for the checkpoints (default: a fresh temporary one)")
    args = ap.parse_args()
    if args.rounds < 3:
        ap.error("--rounds must be at least 3")
    try:
        import torch
    except ImportError as e:
        fail(f"needs PyTorch with CUDA ({e})")
    if not torch.cuda.is_available():
        fail(f"no CUDA device (torch {torch.__version__}, built for CUDA {torch.version.cuda})")
    lib = load_library(args.lib)

    work = args.work or tempfile.mkdtemp(prefix="ckpt_stall_")
    os.makedirs(work, exist_ok=True)
    ckpt_dir, torch_path = os.path.join(work, "tk"), os.path.join(work, "state.pt")
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    state = model_state(torch, args.gib)
    total = sum(t.numel() * t.element_size() for t in state.values())
    tensors, keep = descriptors(state)

    options = Options()
    lib.tk_ckpt_options_init(ctypes.byref(options))
    options.keep_last = 1  # one step on disk at a time, as torch.save's one file
    ckpt = ctypes.c_void_p()
    call(lib, "tk_ckpt_open", ckpt_dir.encode(), ctypes.byref(options), ctypes.byref(ckpt))

    tk_rounds, torch_rounds = [], []
    step = 0
    for r in range(args.rounds + 1):  # round 0 warms up both arms
        os.sync()
        step += 1
        a = tkckpt_round(torch, lib, ckpt, step, tensors)
        b = torch_save_round(torch, state, torch_path)
        if r > 0:
            tk_rounds.append(a)
            torch_rounds.append(b)
    check_restore(torch, lib, ckpt, step, state)
    call(lib, "tk_ckpt_close", ckpt)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)

    results = {
        "machine": machine(torch),
        "state": {"bytes": total, "tensors": len(state), "dtype": "bf16"},
        "rounds": args.rounds,
        "tkckpt": {k: summary(tk_rounds, k) for k in KEYS},
        "torch_save": {k: summary(torch_rounds, k) for k in KEYS},
        "per_round": {"tkckpt": tk_rounds, "torch_save": torch_rounds},
    }
    results["stall_ratio"] = results["torch_save"]["stall_s"]["median"] / results["tkckpt"]["stall_s"]["median"]
    with open(args.json, "w") as f:
        json.dump(results, f, indent=2)

    m = results["machine"]
    print(f"{m['gpu']}, torch {m['torch']}, CUDA {m['cuda']}, {m['cpus']} CPUs; "
          f"{total / 2**30:.2f} GiB in {len(state)} bf16 tensors, {args.rounds} rounds (median, min-max)")
    print(f"{'':12} {'stall s':>22} {'GPU blocked s':>22} {'commit s':>22}")
    for name, key in (("tkckpt", "tkckpt"), ("torch.save", "torch_save")):
        cells = []
        for k in KEYS:
            s = results[key][k]
            cells.append(f"{s['median']:.4f} ({s['min']:.4f}-{s['max']:.4f})")
        print(f"{name:12} " + " ".join(f"{c:>22}" for c in cells))
    print(f"stall: torch.save / tkckpt = {results['stall_ratio']:.0f}x; wrote {args.json}")


if __name__ == "__main__":
    main()
