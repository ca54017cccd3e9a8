"""The checkpoint engine's C API (libtkckpt) driven from Python through ctypes.

A simulated training loop updates numpy arrays (f32, bf16 both as ml_dtypes arrays and
as raw uint16, an int64 counter) every step and saves every k steps, in copy and in
borrow mode; the newest step is restored into fresh arrays and compared bit for bit.
Also: incremental mode with tensors that do not change, a full step's shard read by
the reference safetensors package, and verify naming a tensor with a flipped bit.

Runs under ctest, which sets TK_BIN (the build directory holding libtkckpt.so).
"""
import ctypes
import json
import os
import struct
import sys
import types

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file

BIN = os.environ.get("TK_BIN", "build")
sys.path.insert(0, os.path.join(os.environ.get("TK_SRC", "."), "scripts"))
from tkckpt_ctypes import Options, SaveStats, StepSummary, Tensor, load_library  # noqa: E402

OK, NONE, ERR_USAGE, ERR_INVALID_INPUT = 0, -1, 2, 3
BORROW = 1


LIB = load_library(os.path.join(BIN, "libtkckpt.so"))


class CkptError(Exception):
    def __init__(self, status, message):
        super().__init__(f"status {status}: {message}")
        self.status, self.message = status, message


def check(status):
    if status > 0:
        raise CkptError(status, LIB.tk_ckpt_last_error().decode())
    return status


NUMPY_DTYPES = {"F32": np.float32, "BF16": ml_dtypes.bfloat16, "I64": np.int64, "U16": np.uint16,
                "F64": np.float64, "U8": np.uint8}


def describe(named):
    """C descriptors for {name: (array, dtype name)}; returns them with what keeps them alive."""
    tensors = (Tensor * len(named))()
    keep = []
    for t, (name, (arr, dtype)) in zip(tensors, named.items()):
        assert arr.flags.c_contiguous
        shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
        keep.append(shape)
        t.name, t.dtype, t.ndim = name.encode(), dtype.encode(), arr.ndim
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        t.data, t.nbytes = arr.ctypes.data, arr.nbytes
    return tensors, keep


class Checkpoint:
    """A thin Python face of the C handle, raising CkptError on failures."""

    def __init__(self, path, **options):
        o = Options()
        LIB.tk_ckpt_options_init(ctypes.byref(o))
        for key, value in options.items():
            setattr(o, key, value.encode() if isinstance(value, str) else value)
        self.handle = ctypes.c_void_p()
        check(LIB.tk_ckpt_open(path.encode(), ctypes.byref(o), ctypes.byref(self.handle)))
        self.borrowed = {}

    def close(self):
        if self.handle:
            handle, self.handle = self.handle, None
            check(LIB.tk_ckpt_close(handle))

    def save_async(self, step, named, metadata=None, borrow=False):
        tensors, keep = describe(named)
        keys, values, n = self._metadata(metadata)
        h = ctypes.c_uint64()
        check(LIB.tk_ckpt_save_async(self.handle, step, tensors, len(named), keys, values, n,
                                     BORROW if borrow else 0, ctypes.byref(h)))
        if borrow:
            self.borrowed[h.value] = named  # the arrays must outlive the save
        return h.value

    def wait(self, handle):
        stats = SaveStats()
        try:
            check(LIB.tk_ckpt_wait(self.handle, handle, ctypes.byref(stats)))
        finally:
            self.borrowed.pop(handle, None)
        return stats

    def save(self, step, named, metadata=None):
        tensors, keep = describe(named)
        keys, values, n = self._metadata(metadata)
        stats = SaveStats()
        check(LIB.tk_ckpt_save(self.handle, step, tensors, len(named), keys, values, n, ctypes.byref(stats)))
        return stats

    def latest(self):
        step = ctypes.c_uint64()
        return None if check(LIB.tk_ckpt_latest(self.handle, ctypes.byref(step))) == NONE else step.value

    def steps(self):
        count = ctypes.c_size_t()
        check(LIB.tk_ckpt_list(self.handle, None, 0, ctypes.byref(count)))
        steps = (ctypes.c_uint64 * count.value)()
        check(LIB.tk_ckpt_list(self.handle, steps, count.value, ctypes.byref(count)))
        return list(steps)

    def describe_step(self, step):
        """(summary, {name: (dtype, shape, nbytes)}, metadata lookup function)."""
        s = ctypes.c_void_p()
        check(LIB.tk_ckpt_step_open(self.handle, step, ctypes.byref(s)))
        try:
            summary = StepSummary()
            check(LIB.tk_ckpt_step_info(s, ctypes.byref(summary)))
            entries = {}
            for i in range(summary.tensors):
                t = Tensor()
                check(LIB.tk_ckpt_step_tensor(s, i, ctypes.byref(t)))
                entries[t.name.decode()] = (t.dtype.decode(), tuple(t.shape[k] for k in range(t.ndim)), t.nbytes)
            value = ctypes.c_char_p()
            metadata = {}
            for key in (b"epoch", b"loader"):
                if check(LIB.tk_ckpt_step_metadata(s, key, ctypes.byref(value))) == OK:
                    metadata[key.decode()] = value.value.decode()
            # The summary's strings are the step's, valid until tk_ckpt_step_close: copied.
            summary = types.SimpleNamespace(**{f: getattr(summary, f) for f, _ in StepSummary._fields_})
            return summary, entries, metadata
        finally:
            LIB.tk_ckpt_step_close(s)

    def restore(self, step):
        """Allocate from the step's description, restore into fresh arrays."""
        _, entries, _ = self.describe_step(step)
        out = {name: (np.empty(shape, dtype=NUMPY_DTYPES[dtype]), dtype)
               for name, (dtype, shape, nbytes) in entries.items()}
        for name, (arr, _) in out.items():
            assert arr.nbytes == entries[name][2]
        self.restore_into(step, out)
        return {name: arr for name, (arr, _) in out.items()}

    def restore_into(self, step, named):
        tensors, keep = describe(named)
        check(LIB.tk_ckpt_restore_into(self.handle, step, tensors, len(named)))

    def verify(self, step):
        problems = ctypes.c_uint64()
        text = ctypes.create_string_buffer(1024)
        status = LIB.tk_ckpt_verify(self.handle, step, ctypes.byref(problems), text, len(text))
        return status, problems.value, text.value.decode()

    @staticmethod
    def _metadata(metadata):
        if not metadata:
            return None, None, 0
        keys = (ctypes.c_char_p * len(metadata))(*[k.encode() for k in metadata])
        values = (ctypes.c_char_p * len(metadata))(*[v.encode() for v in metadata.values()])
        return keys, values, len(metadata)


@pytest.fixture
def ckdir(tmp_path):
    return str(tmp_path / "ck")


def bits(arr):
    return np.ascontiguousarray(arr).view(np.uint8).tobytes()


class Model:
    """Arrays a training loop updates in place every step."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.weight = rng.standard_normal((64, 48)).astype(np.float32)
        self.momentum = np.zeros((64, 48), dtype=np.float32)
        self.embedding = rng.standard_normal((32, 16)).astype(ml_dtypes.bfloat16)
        self.head_raw = rng.integers(0, 1 << 16, (8, 24), dtype=np.uint16)  # bf16 bits
        self.counter = np.zeros((), dtype=np.int64)
        self.frozen = rng.standard_normal((128, 32)).astype(np.float32)

    def named(self, frozen=False):
        named = {"layers.0.weight": (self.weight, "F32"), "optim.momentum": (self.momentum, "F32"),
                 "embed.weight": (self.embedding, "BF16"), "head.weight": (self.head_raw, "BF16"),
                 "train.step": (self.counter, "I64")}
        if frozen:
            named["frozen.table"] = (self.frozen, "F32")
        return named

    def gradient(self):
        return self.rng.standard_normal(self.weight.shape).astype(np.float32)

    def apply(self, grad):
        self.momentum *= 0.9
        self.momentum += grad
        self.weight -= 1e-3 * self.momentum
        self.embedding += ml_dtypes.bfloat16(0.0078125)
        self.head_raw ^= np.uint16(1 << (int(self.counter) % 7))
        self.counter += 1

    def snapshot(self, frozen=False):
        return {name: arr.copy() for name, (arr, _) in self.named(frozen).items()}


def assert_same(restored, expected):
    assert sorted(restored) == sorted(expected)
    for name, arr in expected.items():
        assert restored[name].shape == arr.shape, name
        assert bits(restored[name]) == bits(arr), name


def test_version_and_errors(ckdir):
    assert LIB.tk_ckpt_version() == 10000
    ck = Checkpoint(ckdir)
    try:
        assert ck.latest() is None
        with pytest.raises(CkptError) as e:
            Checkpoint(ckdir)
        assert e.value.status == ERR_USAGE and str(os.getpid()) in e.value.message
        model = Model(1)
        with pytest.raises(CkptError) as e:
            ck.save(1, {"x": (model.weight, "float32")})
        assert e.value.status == ERR_USAGE and "float32" in e.value.message
    finally:
        ck.close()


def test_training_loop_copy_and_borrow(ckdir):
    model = Model(2)
    ck = Checkpoint(ckdir, threads=2)
    expected, pending_copy = {}, None
    try:
        for step in range(1, 25):
            grad = model.gradient()
            if step % 4 == 0:
                metadata = {"epoch": str(step // 8), "loader": json.dumps({"offset": step * 32})}
                expected[step] = model.snapshot()
                if step % 8 == 0:
                    # Borrow: no copy; the arrays stay untouched until wait returns.
                    h = ck.save_async(step, model.named(), metadata, borrow=True)
                    stats = ck.wait(h)
                else:
                    # Copy: training goes on at once; waited for at the next save.
                    if pending_copy is not None:
                        ck.wait(pending_copy)
                    pending_copy = ck.save_async(step, model.named(), metadata)
                    model.apply(grad)
                    continue
                assert stats.step == step and stats.tensors_stored == 5
                assert stats.logical_bytes == sum(a.nbytes for a in expected[step].values())
            model.apply(grad)
        ck.wait(pending_copy)
        check(LIB.tk_ckpt_wait_all(ck.handle))
    finally:
        ck.close()

    reader = Checkpoint(ckdir, read_only=1)
    try:
        assert reader.steps() == sorted(expected)
        latest = reader.latest()
        assert latest == 24
        summary, entries, metadata = reader.describe_step(latest)
        assert summary.tensors == 5 and not summary.has_parent and summary.created
        assert entries["embed.weight"] == ("BF16", (32, 16), 32 * 16 * 2)
        assert entries["train.step"] == ("I64", (), 8)
        assert metadata == {"epoch": "3", "loader": json.dumps({"offset": 24 * 32})}
        for step in expected:
            assert_same(reader.restore(step), expected[step])
        assert int(reader.restore(latest)["train.step"]) == 23
        # Restoring into the live arrays works too (resume in place).
        fresh = Model(99)
        reader.restore_into(latest, fresh.named())
        assert_same(fresh.snapshot(), expected[latest])
    finally:
        reader.close()


def test_incremental_unchanged_tensors(ckdir):
    model = Model(3)
    ck = Checkpoint(ckdir, incremental=1, full_every=3)
    expected, stats = {}, {}
    try:
        for step in range(1, 8):
            # A sparse update: most of the weight's bytes stay the same, so its XOR with the
            # parent is mostly zeros; the frozen table never changes.
            model.weight.reshape(-1)[step * 5: step * 5 + 3] += 1.0
            model.counter += 1
            expected[step] = model.snapshot(frozen=True)
            stats[step] = ck.save(step, model.named(frozen=True))
    finally:
        ck.close()

    reader = Checkpoint(ckdir, read_only=1)
    try:
        for step in range(1, 8):
            summary, _, _ = reader.describe_step(step)
            full = step in (1, 4, 7)
            assert bool(summary.has_parent) == (not full), step
            if not full:
                assert summary.parent == (1 if step < 4 else 4)
                assert stats[step].tensors_referenced >= 3  # frozen, momentum, embedding ...
                assert stats[step].tensors_delta >= 1       # ... and the sparse weight update
                assert stats[step].written_bytes < stats[1].written_bytes
            assert_same(reader.restore(step), expected[step])
        assert reader.verify(6)[0] == OK
    finally:
        reader.close()


def shard_of(ckdir, step):
    names = sorted(n for n in os.listdir(os.path.join(ckdir, f"step-{step}")) if n.endswith(".safetensors"))
    assert len(names) == 1
    return os.path.join(ckdir, f"step-{step}", names[0])


def test_full_step_opens_with_safetensors(ckdir):
    model = Model(4)
    ck = Checkpoint(ckdir)
    try:
        model.apply(model.gradient())
        ck.save(5, model.named(frozen=True))
    finally:
        ck.close()
    loaded = load_file(shard_of(ckdir, 5))
    expected = model.snapshot(frozen=True)
    assert sorted(loaded) == sorted(expected)
    for name, arr in expected.items():
        ref = loaded[name]
        assert ref.shape == arr.shape, name
        assert bits(ref) == bits(arr), name
    assert loaded["embed.weight"].dtype == ml_dtypes.bfloat16


def test_verify_names_a_flipped_bit(ckdir):
    model = Model(5)
    ck = Checkpoint(ckdir)
    try:
        ck.save(1, model.named())
        assert ck.verify(1) == (OK, 0, "")
        # Flip one bit in the middle of the weight's bytes, found through the shard header.
        path = shard_of(ckdir, 1)
        with open(path, "r+b") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(header_len))
            begin, end = header["layers.0.weight"]["data_offsets"]
            pos = 8 + header_len + (begin + end) // 2
            f.seek(pos)
            byte = f.read(1)[0]
            f.seek(pos)
            f.write(bytes([byte ^ 0x04]))
        status, problems, text = ck.verify(1)
        assert status == ERR_INVALID_INPUT and problems == 1
        assert "layers.0.weight" in text
        assert "layers.0.weight" in LIB.tk_ckpt_last_error().decode()
        with pytest.raises(CkptError) as e:
            ck.restore(1)
        assert e.value.status == ERR_INVALID_INPUT and "layers.0.weight" in e.value.message
    finally:
        ck.close()
