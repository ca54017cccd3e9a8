#!/usr/bin/env python3
"""A training loop that checkpoints with tensorkit.ckpt, can be killed at any step and
resumes from the newest committed step to the same bits as a run that was never killed.

    PYTHONPATH=build/python python3 examples/train_resume.py DIR [--steps 300] [--every 50]
                                                             [--die-at STEP] [--width 256]

A 3-layer MLP learns a fixed random teacher on synthetic batches, with AdamW. Every
EVERY steps the model and optimizer state go to DIR as an async save: save() returns
once the tensors are copied, the loop goes on while the step is written and committed.
--die-at STEP sends the process SIGKILL right after that step's update (as a crash or a
scheduler would: no handler runs); `timeout -s KILL 2 python3 ...` does the same at an
arbitrary moment, a save in flight included. Started again on the same DIR, the loop
restores model and optimizer in place from the newest committed step and continues.

Bit-identical resume needs every input of a step to be a function of the step number:
the batch comes from a generator seeded with the step (not from one stream that a resume
would have to fast-forward), torch runs deterministic on one thread, and the optimizer
state is restored bit for bit (Adam's moments and step count, not only the weights).
The last line prints a digest of the final model and optimizer bytes.
"""
import argparse
import hashlib
import os
import signal

import torch

import tensorkit.ckpt

SEED = 1234
INPUTS, OUTPUTS, BATCH = 64, 16, 128


def build(width):
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(torch.nn.Linear(INPUTS, width), torch.nn.GELU(),
                                torch.nn.Linear(width, width), torch.nn.GELU(),
                                torch.nn.Linear(width, OUTPUTS))
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    # Create Adam's state now, as its first step would (zero moments, step 0), so that a
    # fresh run and a resumed one hold the same tensors and restore() has targets.
    for p in model.parameters():
        optim.state[p] = {"step": torch.tensor(0.0), "exp_avg": torch.zeros_like(p),
                          "exp_avg_sq": torch.zeros_like(p)}
    teacher = torch.randn(INPUTS, OUTPUTS, generator=torch.Generator().manual_seed(SEED + 1))
    return model, optim, teacher


def batch(step, teacher):
    g = torch.Generator().manual_seed(SEED * 1_000_003 + step)
    x = torch.randn(BATCH, INPUTS, generator=g)
    return x, torch.tanh(x @ teacher)


def state(model, optim):
    return {"model": model.state_dict(), "optim": optim.state_dict()}


def digest(model, optim):
    h = hashlib.sha256()
    for t in list(model.state_dict().values()) + [v for s in optim.state.values() for v in s.values()]:
        h.update(t.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--die-at", type=int, default=None, metavar="STEP")
    ap.add_argument("--width", type=int, default=256)
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model, optim, teacher = build(args.width)

    # incremental=False: AdamW moves every weight and moment each step, so an XOR delta
    # of a step 50 updates away is as large as the tensor (measured: no saving here).
    with tensorkit.ckpt.Checkpointer(args.dir, keep_last=2) as ck:
        start = 0
        if ck.latest is not None:
            sd = state(model, optim)
            start = ck.restore(sd)          # in place, every checksum checked
            optim.load_state_dict(sd["optim"])  # restore() set param_groups' values in sd
            print(f"resume from step {start} (committed: {ck.steps()})", flush=True)
        else:
            print("start at step 0", flush=True)

        pending = None
        for step in range(start + 1, args.steps + 1):
            x, y = batch(step, teacher)
            optim.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optim.step()
            if step % args.every == 0:
                if pending:
                    pending.wait()          # the previous save is committed (or raises)
                pending = ck.save(step, state(model, optim))  # returns once copied
                print(f"step {step} loss {loss.item():.6f} saving", flush=True)
            if step == args.die_at:
                print(f"step {step}: SIGKILL", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        ck.wait()
    print(f"step {args.steps} digest {digest(model, optim)}", flush=True)


if __name__ == "__main__":
    main()
