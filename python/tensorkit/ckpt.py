"""Asynchronous, crash-consistent checkpoints of state dicts (the engine of `tckpt`).

    import tensorkit.ckpt

    with tensorkit.ckpt.Checkpointer("ckpt", incremental=True, keep_last=3) as ck:
        handle = ck.save(step, {"model": model.state_dict(), "optim": optim.state_dict()})
        ...                        # train on: the tensors were copied when save returned
        handle.wait()              # committed (optional: close() waits for every save)
        ck.restore({"model": model.state_dict()})   # newest step, into the tensors in place

Tensors are torch tensors (CPU; CUDA ones too when tensorkit was built with CUDA) and
numpy arrays, of dtypes F32, F16, BF16, F64, I8..I64, U8..U64, BOOL, C64 and FP8. A
nested state dict is saved under flat names joined with "." (see tensorkit._tree);
plain values in it (None, bool, int, float, str: an optimizer's param_groups) are kept
in the step's metadata, so `load()` gives the whole structure back. The directory is
the one `tckpt` reads: `tckpt ls`, `tckpt verify`, `tckpt restore` work on it.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple

from . import _ckpt, _tree
from .errors import InvalidInputError, UsageError

__all__ = ["Checkpointer", "SaveHandle", "SaveStats", "StepInfo", "TensorInfo", "VerifyReport"]

# Metadata key of a step's skeleton (its nesting and plain values); the "tensorkit."
# prefix is reserved.
_TREE_KEY = "tensorkit.tree"
_RESERVED = "tensorkit."

# numpy dtype names (ml_dtypes' for bf16 and fp8) and torch dtype names -> engine names.
_NUMPY_DTYPES = {
    "float32": "F32", "float16": "F16", "float64": "F64", "bfloat16": "BF16",
    "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64", "bool": "BOOL",
    "complex64": "C64", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}
_TORCH_DTYPES = {
    "float32": "F32", "float16": "F16", "float64": "F64", "bfloat16": "BF16",
    "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64", "bool": "BOOL",
    "complex64": "C64", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}

Descriptor = Tuple[str, str, List[int], int, int]


@dataclass(frozen=True)
class SaveStats:
    """What one save cost (seconds) and wrote (bytes)."""

    step: int
    stall_seconds: float     # inside save(): the snapshot copy
    write_seconds: float     # background: encode, checksum, write, fsync
    commit_seconds: float    # manifest, renames, directory fsyncs
    logical_bytes: int       # tensor bytes in the step
    written_bytes: int       # bytes written to the main tier
    tensors_stored: int      # stored whole
    tensors_referenced: int  # incremental: unchanged, taken from the parent step
    tensors_delta: int       # incremental: stored as an XOR delta


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a step, as its manifest describes it."""

    name: str
    dtype: str               # engine name: "F32", "BF16", ...
    shape: Tuple[int, ...]
    nbytes: int
    stored_bytes: int        # in the shard (0 for an unchanged tensor of an incremental step)
    encoding: str            # "raw", "lossless", "xor", "xor-lossless", "ref", "sliced"
    source_step: Optional[int]


@dataclass(frozen=True)
class StepInfo:
    """One committed step."""

    step: int
    dir: str
    created: str             # ISO 8601 UTC
    logical_bytes: int
    stored_bytes: int
    parent: Optional[int]    # incremental steps: the full step they build on
    durable: bool            # also committed on the durable tier
    world_size: int          # ranks of a distributed step; 0 for one process
    metadata: Dict[str, str]  # the caller's metadata (without tensorkit's own keys)
    tensors: List[TensorInfo] = field(default_factory=list)


@dataclass(frozen=True)
class VerifyReport:
    """The outcome of checking a step against its checksums."""

    step: int
    tensors_checked: int
    bytes_checked: int
    problems: List[str]      # one line each, naming the file or tensor

    @property
    def ok(self) -> bool:
        return not self.problems


def _step_info(d: Dict[str, Any]) -> StepInfo:
    tensors = [TensorInfo(**t) for t in d.pop("tensors")]
    d["metadata"] = {k: v for k, v in d["metadata"].items() if not k.startswith(_RESERVED)}
    return StepInfo(tensors=tensors, **d)


def _describe(name: str, obj: Any, writable: bool) -> Tuple[Descriptor, Any]:
    """The engine's descriptor of a tensor and the object that keeps its memory alive."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _describe_torch(name, obj, writable)
    return _describe_numpy(name, obj, writable)


def _describe_torch(name: str, t: Any, writable: bool) -> Tuple[Descriptor, Any]:
    where = f"tensor '{name}'"
    if t.layout != sys.modules["torch"].strided:
        raise UsageError(f"{t.layout} tensors are not supported, only dense ones", where)
    if t.device.type not in ("cpu", "cuda") or (t.device.type == "cuda" and not _ckpt.cuda):
        raise UsageError(f"tensor on {t.device}: this build of tensorkit takes "
                         f"{'CPU and CUDA' if _ckpt.cuda else 'CPU'} tensors", where)
    dtype = _TORCH_DTYPES.get(str(t.dtype).removeprefix("torch."))
    if dtype is None:
        raise UsageError(f"dtype {t.dtype} is not supported", where)
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    if not t.is_contiguous():
        if writable:
            raise UsageError("restore target is not contiguous", where)
        t = t.contiguous()
    t = t.detach()
    return (name, dtype, list(t.shape), t.data_ptr(), t.numel() * t.element_size()), t


def _describe_numpy(name: str, a: Any, writable: bool) -> Tuple[Descriptor, Any]:
    import numpy as np

    where = f"tensor '{name}'"
    dtype = _NUMPY_DTYPES.get(a.dtype.name)
    if dtype is None or a.dtype.byteorder == ">":
        raise UsageError(f"dtype {a.dtype.str if a.dtype.byteorder == '>' else a.dtype.name} is not supported", where)
    if not a.flags.c_contiguous:
        if writable:
            raise UsageError("restore target is not C-contiguous", where)
        a = np.ascontiguousarray(a)
    if writable and not a.flags.writeable:
        raise UsageError("restore target is read-only", where)
    return (name, dtype, list(a.shape), a.__array_interface__["data"][0], a.nbytes), a


def _descriptors(tensors: Mapping[str, _tree.Leaf], writable: bool) -> Tuple[List[Descriptor], List[Any]]:
    descriptors, keep = [], []
    for name, leaf in tensors.items():
        d, k = _describe(name, leaf.value, writable)
        descriptors.append(d)
        keep.append(k)
    return descriptors, keep


class SaveHandle:
    """A save under way. `wait()` blocks until it is committed; the handle may be waited
    for more than once and from any thread."""

    def __init__(self, checkpointer: "Checkpointer", step: int, handle: int) -> None:
        self.step = step
        self._checkpointer = checkpointer
        self._handle = handle
        self._lock = threading.Lock()
        self._outcome: Optional[SaveStats | BaseException] = None

    def wait_snapshot(self) -> None:
        """Return once the state dict may be modified: at once, since save() returns
        after copying it (kept so that training loops read the same on every engine)."""

    def wait(self) -> SaveStats:
        """Block (without the GIL) until the step is committed on the main tier; return
        its statistics or raise the error that failed it (the step then does not exist)."""
        with self._lock:
            if self._outcome is None:
                try:
                    self._outcome = SaveStats(**self._checkpointer._live().wait(self._handle))
                except BaseException as e:  # noqa: B036 - kept and raised to every waiter
                    self._outcome = e
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome

    def wait_durable(self) -> SaveStats:
        """Block until the step is also on the durable tier (and every save before it).
        UsageError without a durable tier."""
        if not self._checkpointer.durable_dir:
            raise UsageError("no durable tier: open the Checkpointer with durable_dir=", self._checkpointer.path)
        stats = self.wait()
        self._checkpointer._live().wait_all()
        return stats

    def done(self) -> bool:
        """True once wait() has returned or raised."""
        return self._outcome is not None

    @property
    def stats(self) -> Optional[SaveStats]:
        """The statistics once wait() has returned, else None."""
        return self._outcome if isinstance(self._outcome, SaveStats) else None

    def __repr__(self) -> str:
        return f"SaveHandle(step={self.step}, done={self.done()})"


class Checkpointer:
    """A checkpoint directory, open for saving (one writer at a time: it holds the
    directory's lock) or, with read_only=True, for reading beside a writer.

    Args:
        path: the directory (created when absent).
        incremental: store only what changed since the last full step (unchanged tensors
            as references, small changes as XOR deltas); every `full_every`-th save is full.
        lossless: entropy-code tensor bytes (bit-exact; smaller for float weights).
        durable_dir: a second, slower tier every committed step is copied to in the background.
        keep_last: keep only the newest this many steps (None: all); `keep_every` also keeps
            steps divisible by it. Steps a kept step takes bytes from are always kept.
        read_only: open without the lock; save() is refused.
        shard_bytes: split a step into shards of about this many bytes (None: one).
        staging_limit: bytes of snapshot copies held at once (None: twice the largest save).
        threads: background threads for encoding, checksums and writes.
    """

    def __init__(self, path: str | os.PathLike, *, incremental: bool = False, lossless: bool = False,
                 durable_dir: str | os.PathLike | None = None, keep_last: Optional[int] = None,
                 keep_every: Optional[int] = None, full_every: int = 10, delta_max_ratio: float = 0.5,
                 read_only: bool = False, shard_bytes: Optional[int] = None, staging_limit: Optional[int] = None,
                 threads: int = 2) -> None:
        self.path = os.fspath(path)
        self.durable_dir = os.fspath(durable_dir) if durable_dir is not None else ""
        for label, value in (("keep_last", keep_last), ("keep_every", keep_every), ("shard_bytes", shard_bytes),
                             ("staging_limit", staging_limit)):
            if value is not None and value < 1:
                raise UsageError(f"{label} must be at least 1 (None for the default), not {value}")
        if full_every < 1:
            raise UsageError(f"full_every must be at least 1, not {full_every}")
        if threads < 1:
            raise UsageError(f"threads must be at least 1, not {threads}")
        self._engine = _ckpt.Engine(self.path, read_only=read_only, durable_dir=self.durable_dir,
                                    keep_last=keep_last or 0, keep_every=keep_every or 0, lossless=lossless,
                                    incremental=incremental, full_every=full_every,
                                    delta_max_ratio=delta_max_ratio, staging_limit=staging_limit or 0,
                                    shard_bytes=shard_bytes or 0, threads=threads)

    # ---- saving ----

    def save(self, step: int, state_dict: Mapping[str, Any], *,
             metadata: Optional[Mapping[str, str]] = None) -> SaveHandle:
        """Save `state_dict` as step `step` (above every step saved before) in the
        background. Returns once its tensors are copied: the caller may update them at
        once. Errors of the background write are raised by the handle's wait()."""
        tensors, values, skeleton = _tree.flatten(state_dict)
        meta: Dict[str, str] = {}
        for k, v in (metadata or {}).items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise UsageError(f"metadata must map str to str; {k!r}: {type(v).__qualname__}")
            if k.startswith(_RESERVED):
                raise UsageError(f"metadata key '{k}': the prefix '{_RESERVED}' is tensorkit's")
            meta[k] = v
        if values or skeleton != {"d": [[k, {"t": k}] for k in tensors]}:
            meta[_TREE_KEY] = json.dumps(skeleton, separators=(",", ":"))
        descriptors, keep = _descriptors(tensors, writable=False)
        handle = self._live().save_async(step, descriptors, meta)
        del keep  # copied by the engine before save_async returned
        return SaveHandle(self, step, handle)

    def wait(self) -> None:
        """Block until every save (and every copy to the durable tier) is done; raise
        the error of a flush that failed."""
        self._live().wait_all()

    # ---- reading ----

    def _step(self, step: Optional[int]) -> int:
        if step is not None:
            return step
        latest = self._live().latest()
        if latest is None:
            raise InvalidInputError("no committed step", self.path)
        return latest

    def restore(self, state_dict: Mapping[str, Any], step: Optional[int] = None) -> int:
        """Read step `step` (default: the newest) into the tensors of `state_dict` in
        place, matched by flat name, checking every checksum; returns the step. Each
        tensor must be contiguous, writable and have the stored dtype and shape
        (UsageError otherwise); a name the step lacks is InvalidInputError. Tensors of
        the step that `state_dict` does not name are skipped. Plain values (an
        optimizer's learning rate) are set in the dicts and lists that hold them, so
        that `optim.load_state_dict(sd)` after restoring `sd` takes them."""
        step = self._step(step)
        tensors, values, _ = _tree.flatten(state_dict)
        descriptors, keep = _descriptors(tensors, writable=True)
        engine = self._live()
        engine.restore_into(step, descriptors)
        del keep
        if values:
            saved = self._skeleton(engine.info(step))
            stored = _tree.skeleton_values(saved) if saved else {}
            for name, leaf in values.items():
                if name in stored and not isinstance(leaf.container, tuple):
                    leaf.container[leaf.key] = stored[name]
        return step

    def load(self, step: Optional[int] = None, *, tensors: Literal["torch", "numpy"] = "torch") -> Dict[str, Any]:
        """Read step `step` (default: the newest) into new tensors (CPU torch tensors or
        numpy arrays; BF16 and FP8 as numpy need ml_dtypes) in the nesting it was saved
        with, plain values included: `model.load_state_dict(load()["model"])`."""
        if tensors not in ("torch", "numpy"):
            raise UsageError(f"tensors must be 'torch' or 'numpy', not {tensors!r}")
        step = self._step(step)
        engine = self._live()
        info = engine.info(step)
        fresh = {t["name"]: _empty(t["dtype"], t["shape"], tensors) for t in info["tensors"]}
        descriptors, keep = _descriptors({n: _tree.Leaf(n, v, None, None) for n, v in fresh.items()}, writable=True)
        engine.restore_into(step, descriptors)
        del keep
        skeleton = self._skeleton(info)
        return _tree.build(skeleton, fresh) if skeleton else fresh

    @staticmethod
    def _skeleton(info: Dict[str, Any]) -> Optional[Any]:
        text = info["metadata"].get(_TREE_KEY)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError as e:
            raise InvalidInputError(f"damaged '{_TREE_KEY}' metadata: {e}", f"step {info['step']}") from None

    def steps(self) -> List[int]:
        """Committed step numbers, ascending (manifests not read)."""
        return self._live().steps()

    @property
    def latest(self) -> Optional[int]:
        """The newest committed step, or None."""
        return self._live().latest()

    def ls(self) -> List[StepInfo]:
        """Every committed step, oldest first, from its manifest."""
        return [_step_info(d) for d in self._live().list()]

    def info(self, step: Optional[int] = None) -> StepInfo:
        """One step's manifest (default: the newest)."""
        return _step_info(self._live().info(self._step(step)))

    def verify(self, step: Optional[int] = None) -> VerifyReport:
        """Check step `step` (default: the newest): manifest checksum, shard sizes and
        every tensor's checksum. Problems are listed in the report, not raised."""
        return VerifyReport(**self._live().verify(self._step(step)))

    def gc(self) -> List[int]:
        """Apply retention now and remove temp directories of killed writers; returns
        the steps removed."""
        return self._live().gc()["removed_steps"]

    def flush_status(self) -> Dict[str, Any]:
        """The durable tier's state: latest_committed, latest_durable, pending, lag_seconds."""
        return self._live().flush_status()

    # ---- lifetime ----

    def _live(self) -> Any:
        if self._engine.closed:
            raise UsageError("the checkpointer is closed", self.path)
        return self._engine

    @property
    def closed(self) -> bool:
        return self._engine.closed

    def close(self) -> None:
        """Wait for every save and flush, then release the directory. Raises the error
        of a background flush that failed; closing twice is a no-op."""
        self._engine.close()

    def __enter__(self) -> "Checkpointer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Checkpointer({self.path!r}{', closed' if self.closed else ''})"


def _empty(dtype: str, shape: Sequence[int], kind: str) -> Any:
    if kind == "torch":
        import torch

        names = {v: k for k, v in _TORCH_DTYPES.items()}
        if dtype not in names:
            raise UsageError(f"{dtype} has no torch dtype")
        return torch.empty(tuple(shape), dtype=getattr(torch, names[dtype]))
    import numpy as np

    names = {v: k for k, v in _NUMPY_DTYPES.items()}
    if dtype not in names:
        raise UsageError(f"{dtype} has no numpy dtype")
    name = names[dtype]
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        try:
            import ml_dtypes
        except ImportError:
            raise UsageError(f"{dtype} as numpy needs the ml_dtypes package (or tensors='torch')") from None
        return np.empty(tuple(shape), dtype=getattr(ml_dtypes, name))
    return np.empty(tuple(shape), dtype=name)
