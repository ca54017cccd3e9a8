"""tensorkit.ckpt, the Python API of the checkpoint engine, driven like a training loop.

A small torch model (a stack of nn.Linear) with its Adam state is saved and restored
into a fresh model and optimizer bit for bit; numpy arrays and torch tensors of every
mapped dtype round-trip; incremental mode stores unchanged tensors as references;
keep_last removes old steps; verify names a tensor whose shard was damaged; errors are
Python exceptions carrying the engine's message (the one tckpt prints); a restore
into a tensor of the wrong shape is refused and leaves it untouched; tckpt verifies and
restores a step saved from Python; the snapshot is taken before save() returns and
waits run without the GIL; the README's example runs as written.

Runs under ctest, which puts the built package (BUILD/python) on PYTHONPATH and sets
TK_BIN (the build directory, holding tckpt).
"""
import os
import subprocess
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest
import torch

import tensorkit
import tensorkit.ckpt as tc

BIN = os.environ.get("TK_BIN", "build")


def make_model(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, optim


def train(model, optim, steps, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        optim.zero_grad()
        model(torch.randn(4, 16, generator=g)).square().mean().backward()
        optim.step()


def same_bits(a, b):
    if isinstance(a, torch.Tensor):
        return (a.dtype == b.dtype and a.shape == b.shape
                and a.view(-1).view(torch.uint8).equal(b.view(-1).view(torch.uint8)))
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_model_and_optimizer_round_trip(tmp_path):
    model, optim = make_model(0)
    train(model, optim, 3, seed=1)
    with tc.Checkpointer(tmp_path / "ck") as ck:
        handle = ck.save(3, {"model": model.state_dict(), "optim": optim.state_dict()}, metadata={"run": "a"})
        stats = handle.wait()
        assert stats.step == 3 and stats.tensors_stored == 4 + 4 * 3
        assert handle.done() and handle.stats == stats and handle.wait() == stats

    # Restore in place: a fresh model, and an optimizer that has taken one step (so that
    # its state tensors exist), then load_state_dict for the plain values.
    model2, optim2 = make_model(7)
    train(model2, optim2, 1, seed=9)
    optim2.param_groups[0]["lr"] = 0.5
    sd = {"model": model2.state_dict(), "optim": optim2.state_dict()}
    with tc.Checkpointer(tmp_path / "ck", read_only=True) as ck:
        assert ck.restore(sd) == 3
        assert ck.info().metadata == {"run": "a"}
    optim2.load_state_dict(sd["optim"])
    for (k, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
        assert same_bits(a, b), k
    for p, q in zip(model.parameters(), model2.parameters()):
        for key in ("step", "exp_avg", "exp_avg_sq"):
            assert same_bits(optim.state[p][key], optim2.state[q][key]), key
    assert optim2.param_groups[0]["lr"] == 1e-3

    # load(): new tensors in the saved nesting (int keys of the optimizer state included).
    with tc.Checkpointer(tmp_path / "ck", read_only=True) as ck:
        loaded = ck.load()
    model3, optim3 = make_model(5)
    model3.load_state_dict(loaded["model"])
    optim3.load_state_dict(loaded["optim"])
    assert sorted(loaded["optim"]["state"]) == [0, 1, 2, 3]
    assert loaded["optim"]["param_groups"][0]["betas"] == (0.9, 0.999)
    for a, b in zip(model.state_dict().values(), model3.state_dict().values()):
        assert same_bits(a, b)
    # The two models now train on identically.
    train(model, optim, 2, seed=3)
    train(model3, optim3, 2, seed=3)
    for a, b in zip(model.state_dict().values(), model3.state_dict().values()):
        assert same_bits(a, b)


NUMPY_DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64,
                np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64]
TORCH_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int16, torch.int32,
                torch.int64, torch.uint8, torch.bool]


def test_numpy_and_torch_dtypes_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    arrays = {np.dtype(dt).name: rng.integers(0, 256, size=(3, 5), dtype=np.uint8).repeat(np.dtype(dt).itemsize, axis=1)
              .view(dt) for dt in NUMPY_DTYPES if dt is not np.bool_}
    arrays["bool"] = rng.integers(0, 2, size=(7,)).astype(np.bool_)
    arrays["scalar"] = np.array(2.5, dtype=np.float32)
    arrays["empty"] = np.zeros((0, 4), dtype=np.int32)
    arrays["transposed"] = np.arange(12, dtype=np.float64).reshape(3, 4).T  # saved as a copy
    tensors = {str(dt).removeprefix("torch."): torch.randn(4, 3).mul(100).to(dt) for dt in TORCH_DTYPES}
    with tc.Checkpointer(tmp_path / "ck") as ck:
        ck.save(1, {"np": arrays, "pt": tensors}).wait()
        stored = {t.name: t.dtype for t in ck.info(1).tensors}
        assert stored["np.bfloat16"] == "BF16" and stored["pt.bfloat16"] == "BF16" and stored["np.bool"] == "BOOL"
        assert stored["np.complex64"] == "C64" and stored["pt.int8"] == "I8" and stored["np.uint64"] == "U64"

        targets = {"np": {k: np.zeros_like(v, order="C") for k, v in arrays.items()},
                   "pt": {k: torch.zeros_like(v) for k, v in tensors.items()}}
        ck.restore(targets)
        for k, v in arrays.items():
            assert same_bits(np.array(v, order="C"), targets["np"][k]), k
        for k, v in tensors.items():
            assert same_bits(v, targets["pt"][k]), k
        loaded = ck.load(tensors="numpy")
        for k, v in arrays.items():
            assert same_bits(np.array(v, order="C"), loaded["np"][k]), k


def test_snapshot_taken_before_save_returns(tmp_path):
    w = torch.arange(1 << 20, dtype=torch.float32)
    expect = w.clone()
    with tc.Checkpointer(tmp_path / "ck") as ck:
        handle = ck.save(1, {"w": w})
        handle.wait_snapshot()
        w.zero_()  # training goes on while the step is written
        handle.wait()
        assert same_bits(ck.load()["w"], expect)


def test_incremental_references_unchanged_tensors(tmp_path):
    frozen = torch.randn(256, 64)
    moving = torch.randn(256, 64)
    with tc.Checkpointer(tmp_path / "ck", incremental=True, full_every=3) as ck:
        kept = []
        for step in range(1, 5):
            stats = ck.save(step, {"frozen": frozen, "moving": moving}).wait()
            kept.append(moving.clone())
            if step in (1, 4):
                assert stats.tensors_stored == 2 and stats.tensors_referenced == 0, step
            else:
                assert stats.tensors_referenced == 1 and stats.tensors_stored + stats.tensors_delta == 1, step
            moving += torch.randn(256, 64)
        info = ck.info(2)
        assert info.parent == 1
        assert {t.name: t.encoding for t in info.tensors}["frozen"] == "ref"
        for step in (2, 3):
            out = {"frozen": torch.empty(256, 64), "moving": torch.empty(256, 64)}
            ck.restore(out, step)
            assert same_bits(out["frozen"], frozen) and same_bits(out["moving"], kept[step - 1])
            assert ck.verify(step).ok


def test_keep_last_retention_and_lossless(tmp_path):
    x = np.linspace(0, 1, 4096, dtype=np.float32)
    with tc.Checkpointer(tmp_path / "ck", keep_last=2, lossless=True) as ck:
        for step in range(1, 6):
            ck.save(step * 10, {"x": x + step}).wait()
        assert ck.steps() == [40, 50]
        assert ck.latest == 50
        assert [s.step for s in ck.ls()] == [40, 50]
        assert {t.encoding for t in ck.info().tensors} == {"lossless"}
        assert same_bits(ck.load(tensors="numpy")["x"], x + 5)
    assert sorted(os.listdir(tmp_path / "ck")) == [".lock", "latest", "step-40", "step-50"]


def test_durable_tier(tmp_path):
    with tc.Checkpointer(tmp_path / "fast", durable_dir=tmp_path / "slow") as ck:
        handle = ck.save(1, {"x": np.arange(100, dtype=np.int64)})
        handle.wait_durable()
        assert ck.info(1).durable
        assert ck.flush_status()["latest_durable"] == 1
    with tc.Checkpointer(tmp_path / "slow", read_only=True) as slow:
        assert slow.steps() == [1] and slow.verify(1).ok
    with tc.Checkpointer(tmp_path / "other") as ck:
        with pytest.raises(tensorkit.UsageError, match="no durable tier"):
            ck.save(1, {"x": np.zeros(2)}).wait_durable()


def test_verify_names_a_damaged_tensor(tmp_path):
    with tc.Checkpointer(tmp_path / "ck") as ck:
        ck.save(1, {"a": np.arange(1000, dtype=np.float32), "b": np.ones(1000, dtype=np.float32)}).wait()
    shard = next((tmp_path / "ck" / "step-1").glob("shard-*"))
    data = bytearray(shard.read_bytes())
    data[-10] ^= 0x01  # a bit of the last tensor's data
    shard.write_bytes(bytes(data))
    with tc.Checkpointer(tmp_path / "ck", read_only=True) as ck:
        report = ck.verify()
        assert not report.ok and report.step == 1
        assert len(report.problems) == 1 and "'b'" in report.problems[0], report.problems
        out = {"a": np.empty(1000, np.float32), "b": np.empty(1000, np.float32)}
        with pytest.raises(tensorkit.InvalidInputError, match="checksum") as e:
            ck.restore(out)
        assert "'b'" in str(e.value)
        ck.restore({"a": out["a"]})  # the undamaged tensor still reads
        assert same_bits(out["a"], np.arange(1000, dtype=np.float32))


def tckpt_error(*args):
    r = subprocess.run([os.path.join(BIN, "tckpt"), *args], capture_output=True, text=True)
    assert r.returncode != 0
    return r.stderr.strip()


def test_errors_carry_the_engine_message(tmp_path):
    # A directory that is not a checkpoint: the message tckpt prints, as an exception.
    (tmp_path / "notckpt").mkdir()
    (tmp_path / "notckpt" / "data.bin").write_bytes(b"x")
    with pytest.raises(tensorkit.InvalidInputError) as e:
        tc.Checkpointer(tmp_path / "notckpt")
    assert isinstance(e.value, tensorkit.TensorkitError) and isinstance(e.value, ValueError)
    assert e.value.where == str(tmp_path / "notckpt")
    assert tckpt_error("ls", str(tmp_path / "notckpt")).endswith(str(e.value))

    # A directory that cannot be created: an OSError.
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OSError) as e:
        tc.Checkpointer(tmp_path / "file" / "ck")
    assert isinstance(e.value, tensorkit.TensorkitIOError) and "Not a directory" in str(e.value)

    with tc.Checkpointer(tmp_path / "ck") as ck:
        # A second writer is refused, naming the holder.
        with pytest.raises(tensorkit.UsageError, match=f"pid {os.getpid()}"):
            tc.Checkpointer(tmp_path / "ck")
        ck.save(5, {"x": np.zeros(3)}).wait()
        with pytest.raises(ValueError, match="step 4 is not after the newest step 5"):
            ck.save(4, {"x": np.zeros(3)})
        with pytest.raises(tensorkit.InvalidInputError, match="no tensor 'y' in step 5"):
            ck.restore({"y": np.zeros(3)})
        with pytest.raises(tensorkit.UsageError, match="prefix 'tensorkit.'"):
            ck.save(6, {"x": np.zeros(3)}, metadata={"tensorkit.tree": "{}"})
        with pytest.raises(TypeError, match="'x.o' is a builtins.object"):
            ck.save(6, {"x": {"o": object()}})
        with pytest.raises(tensorkit.UsageError, match="float16 is not supported|dtype >f2"):
            ck.save(6, {"x": np.zeros(3, dtype=">f2")})
    with pytest.raises(tensorkit.UsageError, match="closed"):
        ck.steps()
    ck.close()  # a second close is a no-op


def test_restore_into_wrong_shape_or_dtype_refused(tmp_path):
    with tc.Checkpointer(tmp_path / "ck") as ck:
        ck.save(1, {"w": torch.ones(3, 4), "b": np.ones(4, np.float32)}).wait()
        wrong = torch.full((4, 3), 7.0)
        with pytest.raises(tensorkit.UsageError) as e:
            ck.restore({"w": wrong})
        assert str(e.value) == "restore target is F32 [4, 3], the step holds F32 [3, 4] (step-1: tensor 'w')"
        assert bool((wrong == 7).all())
        with pytest.raises(ValueError, match="restore target is F64 \\[4\\], the step holds F32 \\[4\\]"):
            ck.restore({"b": np.zeros(4)})
        with pytest.raises(ValueError, match="not contiguous"):
            ck.restore({"w": torch.zeros(4, 3).t()})
        frozen = np.zeros(4, np.float32)
        frozen.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            ck.restore({"b": frozen})


def test_waits_release_the_gil(tmp_path):
    # A thread waits for a slow save (lossless, durable tier); the main thread keeps
    # running meanwhile: no gap between its iterations as long as the wait.
    data = np.random.default_rng(0).standard_normal(16 << 20).astype(np.float32)
    with tc.Checkpointer(tmp_path / "ck", lossless=True, durable_dir=tmp_path / "slow") as ck:
        handle = ck.save(1, {"x": data})
        waiter = threading.Thread(target=handle.wait_durable)
        # Timed from before start(): the new thread may run (and block) before start()
        # returns.
        t0 = last = time.monotonic()
        gap = 0.0
        waiter.start()
        while waiter.is_alive():
            now = time.monotonic()
            gap, last = max(gap, now - last), now
        elapsed = time.monotonic() - t0
        waiter.join()
        assert handle.stats is not None
    assert elapsed > 0.05, "the save was too quick to tell"
    assert gap < elapsed / 2, (gap, elapsed)
    print(f"wait {elapsed:.3f} s, longest pause {gap:.4f} s")


def test_readme_example_runs_as_written(tmp_path):
    src = os.environ.get("TK_SRC", ".")
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme[readme.index("#### From Python"):]
    code = section[section.index("```python\n") + 10:]
    code = code[:code.index("```\n")]
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "[60, 80, 100]",
        "restore target is F32 [16, 32], the step holds F32 [32, 16] (step-100: tensor 'model.0.weight')"]


def test_tckpt_reads_what_python_saved(tmp_path):
    # The same directories: tckpt verifies a step saved from Python and restores it to a
    # safetensors file that the reference package reads back bit for bit.
    from safetensors.numpy import load_file

    state = {"w": np.arange(24, dtype=np.float32).reshape(4, 6), "n": {"i": np.array([1, -2, 3], dtype=np.int64)}}
    with tc.Checkpointer(tmp_path / "ck", lossless=True) as ck:
        ck.save(7, state).wait()
    tckpt = os.path.join(BIN, "tckpt")
    subprocess.run([tckpt, "verify", str(tmp_path / "ck")], check=True, capture_output=True)
    subprocess.run([tckpt, "restore", str(tmp_path / "ck"), "-o", str(tmp_path / "out.safetensors")],
                   check=True, capture_output=True)
    out = load_file(tmp_path / "out.safetensors")
    assert sorted(out) == ["n.i", "w"]
    assert same_bits(out["w"], state["w"]) and same_bits(out["n.i"], state["n"]["i"])
