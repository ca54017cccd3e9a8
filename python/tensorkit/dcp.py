"""A torch.distributed.checkpoint (DCP) storage backend on the tensorkit engine.

    import torch.distributed.checkpoint as dcp
    from tensorkit.dcp import Reader, Writer

    dcp.save(state_dict, storage_writer=Writer("ckpt"))          # a new step each time
    dcp.load(state_dict, storage_reader=Reader("ckpt"))          # the newest step

DCP plans and reshards; tensorkit writes and reads. The directory holds one tensorkit
checkpoint directory per saving rank and one for DCP's metadata:

    ckpt/rank-R/step-N/    the chunks rank R wrote in step N, one tensor each, named
                           "FQN@OFFSETS" ("model.0.weight@0,0"); other objects as
                           U8 tensors "FQN@bytes"
    ckpt/meta/step-N/      DCP's Metadata (pickled, as DCP's own FileSystemWriter keeps
                           it) in the U8 tensor "metadata"

Every rank commits its step with the engine's protocol (fsync, rename, checksums) before
the coordinator commits meta/step-N, so a DCP step exists exactly when meta/step-N does:
a save killed at any moment leaves the newest committed step loadable. A rank directory
may then hold a step that meta does not (never read; the next save takes a later number).
With incremental=True each rank stores only the chunks that changed since its last full
step. The directory must be visible to every rank at the same path (a shared file
system), as for DCP's FileSystemWriter.
"""
from __future__ import annotations

import dataclasses
import io
import os
import pickle
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.distributed.checkpoint import Metadata, StorageReader, StorageWriter
from torch.distributed.checkpoint.metadata import MetadataIndex, StorageMeta
from torch.distributed.checkpoint.planner import (LoadItemType, LoadPlan, LoadPlanner, SavePlan, SavePlanner,
                                                  WriteItemType)
from torch.distributed.checkpoint.storage import WriteResult
from torch.futures import Future

from .ckpt import Checkpointer, _empty
from .errors import InvalidInputError

__all__ = ["Writer", "Reader"]

_META_DIR = "meta"
_META_TENSOR = "metadata"


@dataclasses.dataclass(frozen=True)
class _Slot:
    """Where a rank writes in this save (set by the coordinator's global plan)."""

    step: int
    rank: int


@dataclasses.dataclass(frozen=True)
class StoredChunk:
    """Where one DCP item lives: tensor `name` of step `step` in rank-`rank`/."""

    rank: int
    step: int
    name: str


def _rank_dir(path: str, rank: int) -> str:
    return os.path.join(path, f"rank-{rank}")


def _newest_step(path: str) -> int:
    """The newest step number in meta/ or any rank directory (0 when none)."""
    newest = 0
    if not os.path.isdir(path):
        return newest
    for entry in os.listdir(path):
        if entry == _META_DIR or entry.startswith("rank-"):
            with Checkpointer(os.path.join(path, entry), read_only=True) as ck:
                newest = max(newest, ck.latest or 0)
    return newest


def _chunk_name(index: MetadataIndex, byte_io: bool) -> str:
    if byte_io:
        return f"{index.fqn}@bytes"
    return f"{index.fqn}@{','.join(str(o) for o in index.offset or ())}"


class Writer(StorageWriter):
    """DCP StorageWriter saving each dcp.save() as a new tensorkit step of `path`.

    Args:
        path: the checkpoint directory (created when absent).
        step: the step number to save as (default: one above every step in `path`).
        incremental, lossless, full_every, threads: as for tensorkit.ckpt.Checkpointer,
            applied to each rank's directory.
    """

    def __init__(self, path: str | os.PathLike, *, step: Optional[int] = None, incremental: bool = False,
                 lossless: bool = False, full_every: int = 10, threads: int = 2) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.step = step
        self.options = dict(incremental=incremental, lossless=lossless, full_every=full_every, threads=threads)
        self.rank: Optional[int] = None
        self.is_coordinator = False

    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        if checkpoint_id:
            self.path = os.fspath(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        return isinstance(checkpoint_id, (str, os.PathLike))

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        self.is_coordinator = is_coordinator
        self.rank = kwargs.get("rank")

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        return plan

    def prepare_global_plan(self, plans: List[SavePlan]) -> List[SavePlan]:
        os.makedirs(self.path, exist_ok=True)
        step = self.step if self.step is not None else _newest_step(self.path) + 1
        return [dataclasses.replace(plan, storage_data=_Slot(step, i)) for i, plan in enumerate(plans)]

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future[List[WriteResult]]:
        slot = plan.storage_data
        if not isinstance(slot, _Slot):
            raise InvalidInputError("the save plan was not prepared by tensorkit.dcp.Writer's global plan")
        state: Dict[str, Any] = {}
        results: List[WriteResult] = []
        for item in plan.items:
            byte_io = item.type == WriteItemType.BYTE_IO
            name = _chunk_name(item.index, byte_io)
            data = planner.resolve_data(item)
            if byte_io:
                buffer = data.getbuffer() if isinstance(data, io.BytesIO) else memoryview(data)
                tensor = torch.frombuffer(bytearray(buffer), dtype=torch.uint8) if len(buffer) else \
                    torch.empty(0, dtype=torch.uint8)
            else:
                tensor = data.detach()
                if tensor.device.type not in ("cpu", "cuda"):
                    tensor = tensor.cpu()
            state[name] = tensor
            results.append(WriteResult(index=item.index, size_in_bytes=tensor.numel() * tensor.element_size(),
                                       storage_data=StoredChunk(slot.rank, slot.step, name)))
        with Checkpointer(_rank_dir(self.path, slot.rank), **self.options) as ck:
            ck.save(slot.step, state).wait()
        future: Future[List[WriteResult]] = Future()
        future.set_result(results)
        return future

    def finish(self, metadata: Metadata, results: List[List[WriteResult]]) -> None:
        metadata.storage_data = {r.index: r.storage_data for rank in results for r in rank}
        step = next((r.storage_data.step for rank in results for r in rank), None)
        if step is None:
            step = self.step if self.step is not None else _newest_step(self.path) + 1
        blob = pickle.dumps(metadata)
        with Checkpointer(os.path.join(self.path, _META_DIR)) as ck:
            ck.save(step, {_META_TENSOR: torch.frombuffer(bytearray(blob), dtype=torch.uint8)}).wait()

    def storage_meta(self) -> Optional[StorageMeta]:
        return StorageMeta(checkpoint_id=self.path)


class Reader(StorageReader):
    """DCP StorageReader loading step `step` (default: the newest) of a directory that
    tensorkit.dcp.Writer saved into; every chunk read is checked against its checksum."""

    def __init__(self, path: str | os.PathLike, *, step: Optional[int] = None) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.step = step
        self.storage_data: Dict[MetadataIndex, StoredChunk] = {}

    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        self.storage_data = {}
        if checkpoint_id:
            self.path = os.fspath(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        return os.path.isdir(os.path.join(os.fspath(checkpoint_id), _META_DIR))

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        meta_dir = os.path.join(self.path, _META_DIR)
        if not os.path.isdir(meta_dir):
            raise InvalidInputError("not a tensorkit DCP checkpoint: no meta/ directory", self.path)
        with Checkpointer(meta_dir, read_only=True) as ck:
            blob = ck.load(self.step, tensors="numpy")[_META_TENSOR]
        metadata = pickle.loads(blob.tobytes())
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta(checkpoint_id=self.path)
        return metadata

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        self.storage_data = metadata.storage_data

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        return plan

    def prepare_global_plan(self, plans: List[LoadPlan]) -> List[LoadPlan]:
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future[None]:
        # Every chunk this rank needs, read once per (rank, step) directory in one engine
        # call (its reads run in parallel), then narrowed to each item's piece.
        wanted: Dict[Tuple[int, int], set] = {}
        for item in plan.items:
            chunk = self.storage_data[item.storage_index]
            wanted.setdefault((chunk.rank, chunk.step), set()).add(chunk.name)
        chunks: Dict[Tuple[int, int, str], torch.Tensor] = {}
        for (rank, step), names in wanted.items():
            with Checkpointer(_rank_dir(self.path, rank), read_only=True) as ck:
                stored = {t.name: t for t in ck.info(step).tensors}
                missing = sorted(names - stored.keys())
                if missing:
                    raise InvalidInputError(f"no tensor '{missing[0]}' in step {step}", _rank_dir(self.path, rank))
                fresh = {n: _empty(stored[n].dtype, stored[n].shape, "torch") for n in names}
                ck.restore(fresh, step)
            chunks.update({(rank, step, n): t for n, t in fresh.items()})
        for item in plan.items:
            chunk = self.storage_data[item.storage_index]
            data = chunks[(chunk.rank, chunk.step, chunk.name)]
            if item.type == LoadItemType.BYTE_IO:
                planner.load_bytes(item, io.BytesIO(data.numpy().tobytes()))
                continue
            for dim, (offset, length) in enumerate(zip(item.storage_offsets, item.lengths)):
                data = data.narrow(dim, offset, length)
            target = planner.resolve_tensor(item).detach()
            if target.size() != data.size():
                raise InvalidInputError(f"chunk is {list(data.size())}, the plan wants {list(target.size())}",
                                        f"tensor '{chunk.name}'")
            target.copy_(data)
            planner.commit_tensor(item, target)
        future: Future[None] = Future()
        future.set_result(None)
        return future
