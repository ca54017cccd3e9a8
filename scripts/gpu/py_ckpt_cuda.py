"""tensorkit.ckpt with CUDA tensors, on a GPU machine: save a state dict held in device
memory (async, then the snapshot and commit waits), restore it into other CUDA tensors in
place and load it back, and check every tensor bit for bit; incremental mode saves a
second step with one tensor changed. Writes a JSON report; exit 0 only when every check
passed, 5 when there is no GPU or tensorkit was built without CUDA (nothing checked).

    PYTHONPATH=BUNDLE/python python3 scripts/gpu/py_ckpt_cuda.py --json OUT.json
"""
import argparse
import json
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--mib", type=float, default=256, help="size of the state dict")
    ap.add_argument("--device", default="cuda", help="cpu: the same checks on CPU tensors (to test this script)")
    args = ap.parse_args()
    report = {"checks": {}}

    def done(code):
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(json.dumps(report))
        sys.exit(code)

    try:
        import torch
        import tensorkit.ckpt as tkc
        from tensorkit import _ckpt
    except ImportError as e:
        report["skipped"] = f"import failed: {e}"
        done(5)
    dev = args.device
    if dev == "cuda" and (not torch.cuda.is_available() or not _ckpt.cuda):
        report["skipped"] = f"torch.cuda {torch.cuda.is_available()}, tensorkit built with CUDA {_ckpt.cuda}"
        done(5)
    report["device"] = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    gen = torch.Generator(device=dev).manual_seed(0)
    n = int(args.mib * 2**20 / 4 / 3)
    state = {
        "w_f32": torch.randn(n, device=dev, generator=gen),
        "w_bf16": torch.randn(n, device=dev, generator=gen).to(torch.bfloat16),
        "w_f16": torch.randn(n // 2, device=dev, generator=gen).to(torch.float16),
        "ids": torch.randint(0, 2**40, (4096,), device=dev, generator=gen),
        "mask": torch.rand(1000, device=dev, generator=gen) > 0.5,
    }
    with tempfile.TemporaryDirectory() as d:
        with tkc.Checkpointer(d, incremental=True) as ck:
            t0 = time.perf_counter()
            h = ck.save(1, state)
            stall = time.perf_counter() - t0
            h.wait_snapshot()
            snap = time.perf_counter() - t0
            kept = state["w_f32"].clone()
            state["w_f32"].add_(1.0)  # after the snapshot: must not reach step 1
            h.wait()
            report["save"] = {"stall_s": stall, "snapshot_s": snap, "commit_s": time.perf_counter() - t0}
            state["w_f32"] = kept
            h2 = ck.save(2, {**state, "ids": state["ids"] + 1})
            h2.wait()
            into = {k: torch.empty_like(v) for k, v in state.items()}
            t0 = time.perf_counter()
            ck.restore(into, step=1)
            if dev == "cuda":
                torch.cuda.synchronize()
            report["restore_s"] = time.perf_counter() - t0
            report["checks"]["restore_in_place"] = all(
                into[k].device.type == dev and torch.equal(into[k], state[k]) for k in state)
            loaded = ck.load(2)
            report["checks"]["incremental_step"] = bool(
                torch.equal(loaded["ids"].to(dev), state["ids"] + 1)
                and all(torch.equal(loaded[k].to(dev), state[k]) for k in state if k != "ids"))
            report["checks"]["verify"] = bool(ck.verify(1).ok and ck.verify(2).ok)
    done(0 if all(report["checks"].values()) else 1)


if __name__ == "__main__":
    main()
