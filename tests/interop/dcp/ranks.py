"""One rank of a tensorkit.dcp job under torchrun (gloo): `save DIR` or `load DIR [STEP]`.

The state is the same whatever the world size: DTensors sharded on dimension 0 and 1
(sizes that do not divide by 2 or 3), a replicated plain tensor and plain values, all
derived from the step number, and a DTensor that never changes (stored by reference in
the second, incremental step). `save` saves it; `load` loads into zeroed tensors sharded
over this job's ranks and exits 1 unless every local shard equals the expected one bit
for bit.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

from tensorkit.dcp import Reader, Writer


def full_state(step):
    g = torch.Generator().manual_seed(step)
    return {
        "w": torch.randn(11, 6, generator=g),
        "b": torch.randn(4, 7, generator=g).to(torch.bfloat16),
        "r": torch.arange(5, dtype=torch.int64) * step,
        "e": torch.randn(9, 5, generator=torch.Generator().manual_seed(99)),  # unchanged: a reference
        "extra": {"step": step, "name": f"run-{step}"},
    }


def sharded(state, mesh):
    return {"w": distribute_tensor(state["w"], mesh, [Shard(0)]),
            "b": distribute_tensor(state["b"], mesh, [Shard(1)]),
            "e": distribute_tensor(state["e"], mesh, [Shard(0)]),
            "r": state["r"].clone(), "extra": dict(state["extra"])}


def main():
    mode, path = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    if mode == "save":
        for step in (1, 2):
            dcp.save(sharded(full_state(step), mesh), storage_writer=Writer(path, incremental=True))
    else:
        step = int(sys.argv[3])
        expect = sharded(full_state(step), mesh)
        target = {k: (torch.zeros_like(v) if isinstance(v, torch.Tensor) else {"step": 0, "name": ""})
                  for k, v in expect.items()}
        dcp.load(target, storage_reader=Reader(path, step=step))
        for k in ("w", "b", "e"):
            got, want = target[k].to_local(), expect[k].to_local()
            assert got.dtype == want.dtype and got.view(-1).view(torch.uint8).equal(want.view(-1).view(torch.uint8)), k
        assert torch.equal(target["r"], expect["r"]), "r"
        assert target["extra"] == expect["extra"], target["extra"]
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: step {step} ok", flush=True)
    # Not destroy_process_group(): with 3 CPU ranks, torch 2.15's gloo teardown aborts
    # now and then ("terminate called without an active exception") in this script with
    # torch's own FileSystemReader as well. Everything is written and checked by now.
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
