"""tensorkit.dcp: torch.distributed.checkpoint saving and loading through the engine.

Single process: a model's state dict with plain values saved with dcp.save and loaded
bit for bit, a second incremental save storing unchanged chunks as references, an older
step loaded by number, dcp.async_save; a save whose coordinator fails before committing
the metadata, and a process killed (SIGKILL) in a loop of saves, both leave the newest
committed step loadable and the next save working. Under torchrun (gloo): saved on 2
ranks as sharded DTensors, loaded on 1 and 3 ranks bit for bit, both steps.

Runs under ctest, which puts the built package (BUILD/python) on PYTHONPATH.
"""
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException  # a BaseException

import tensorkit
import tensorkit.ckpt as tc
from tensorkit.dcp import Reader, Writer

HERE = os.path.dirname(os.path.abspath(__file__))
# Single-process saves and loads: DCP warns that it assumes no process group.
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


def same_bits(a, b):
    return (a.dtype == b.dtype and a.shape == b.shape
            and a.view(-1).view(torch.uint8).equal(b.view(-1).view(torch.uint8)))


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3).to(torch.bfloat16))


def test_single_process_save_load_incremental(tmp_path):
    model = make_model(0)
    first = {k: v.clone() for k, v in model.state_dict().items()}
    sd = {"model": model.state_dict(), "extra": {"epoch": 3, "tag": "a"}}
    dcp.save(sd, storage_writer=Writer(tmp_path, incremental=True))
    with torch.no_grad():
        model[0].weight.mul_(2)  # only this tensor changes
    sd["extra"]["epoch"] = 4
    dcp.save(sd, storage_writer=Writer(tmp_path, incremental=True))

    with tc.Checkpointer(tmp_path / "rank-0", read_only=True) as ck:
        encodings = {t.name: t.encoding for t in ck.info(2).tensors}
    assert encodings["model.0.weight@0,0"] != "ref"
    assert encodings["model.0.bias@0"] == "ref" and encodings["model.2.weight@0,0"] == "ref"
    with tc.Checkpointer(tmp_path / "meta", read_only=True) as ck:
        assert ck.steps() == [1, 2]

    fresh = make_model(1)
    target = {"model": fresh.state_dict(), "extra": {"epoch": 0, "tag": ""}}
    dcp.load(target, storage_reader=Reader(tmp_path))
    assert target["extra"] == {"epoch": 4, "tag": "a"}
    for k, v in model.state_dict().items():
        assert same_bits(fresh.state_dict()[k], v), k
    dcp.load(target, storage_reader=Reader(tmp_path, step=1))
    assert target["extra"]["epoch"] == 3
    for k, v in first.items():
        assert same_bits(fresh.state_dict()[k], v), k


def test_async_save(tmp_path):
    # dcp.async_save stages a copy, then runs write_data and finish on its own thread.
    state = {"a": torch.arange(1000, dtype=torch.float32), "o": {"k": 1}}
    future = dcp.async_save(state, storage_writer=Writer(tmp_path))
    state["a"].zero_()
    future.result()
    target = {"a": torch.zeros(1000), "o": {"k": 0}}
    dcp.load(target, storage_reader=Reader(tmp_path))
    assert torch.equal(target["a"], torch.arange(1000, dtype=torch.float32)) and target["o"] == {"k": 1}


def test_failed_commit_leaves_the_previous_step(tmp_path, monkeypatch):
    dcp.save({"x": torch.full((4,), 1.0)}, storage_writer=Writer(tmp_path))

    def crash(self, metadata, results):
        raise RuntimeError("coordinator died")

    monkeypatch.setattr(Writer, "finish", crash)
    with pytest.raises(CheckpointException, match="coordinator died"):
        dcp.save({"x": torch.full((4,), 2.0)}, storage_writer=Writer(tmp_path))
    monkeypatch.undo()
    with tc.Checkpointer(tmp_path / "rank-0", read_only=True) as ck:
        assert ck.steps() == [1, 2]  # the rank's data of the failed save: never read
    target = {"x": torch.zeros(4)}
    dcp.load(target, storage_reader=Reader(tmp_path))
    assert target["x"].tolist() == [1.0] * 4
    dcp.save({"x": torch.full((4,), 3.0)}, storage_writer=Writer(tmp_path))
    with tc.Checkpointer(tmp_path / "meta", read_only=True) as ck:
        assert ck.steps() == [1, 3]
    dcp.load(target, storage_reader=Reader(tmp_path))
    assert target["x"].tolist() == [3.0] * 4


SAVER = """
import sys, warnings, torch, torch.distributed.checkpoint as dcp
from tensorkit.dcp import Writer
warnings.filterwarnings("ignore")
for i in range(1, 100000):
    value = float(i)
    state = {"a": torch.full((256, 256), value), "b": torch.full((1000,), value, dtype=torch.float64),
             "i": {"value": i}}
    dcp.save(state, storage_writer=Writer(sys.argv[1]))
    print(i, flush=True)
"""


def test_sigkill_during_saves_leaves_a_loadable_step(tmp_path):
    for delay in (0.0, 0.05, 0.13):
        path = tmp_path / f"k{delay}"
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "1"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        target = {"a": torch.zeros(256, 256), "b": torch.zeros(1000, dtype=torch.float64), "i": {"value": 0}}
        dcp.load(target, storage_reader=Reader(path))
        i = target["i"]["value"]
        assert i >= 1
        assert bool((target["a"] == i).all()) and bool((target["b"] == i).all()), i
        for entry in os.listdir(path):
            with tc.Checkpointer(path / entry, read_only=True) as ck:
                assert all(ck.verify(s).ok for s in ck.steps())
        # The next save works (after any step the killed save committed on the rank).
        dcp.save({"a": torch.ones(256, 256), "b": torch.ones(1000, dtype=torch.float64), "i": {"value": -1}},
                 storage_writer=Writer(path))
        dcp.load(target, storage_reader=Reader(path))
        assert target["i"]["value"] == -1 and bool((target["a"] == 1).all())


def test_reader_refuses_a_directory_without_metadata(tmp_path):
    # DCP wraps what the reader raises, with its message.
    message = f"not a tensorkit DCP checkpoint: no meta/ directory \\({tmp_path}\\)"
    with pytest.raises(CheckpointException, match=message):
        dcp.load({"x": torch.zeros(2)}, storage_reader=Reader(tmp_path))
    with pytest.raises(tensorkit.InvalidInputError, match="no meta/ directory"):
        Reader(tmp_path).read_metadata()


def torchrun(nproc, *args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                        os.path.join(HERE, "dcp", "ranks.py"), *args],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_torchrun_save_on_2_ranks_load_on_1_and_3(tmp_path):
    path = str(tmp_path / "ck")
    torchrun(2, "save", path)
    assert sorted(os.listdir(path)) == ["meta", "rank-0", "rank-1"]
    with tc.Checkpointer(os.path.join(path, "rank-1"), read_only=True) as ck:
        assert "ref" in {t.encoding for t in ck.info(2).tensors}
    for nproc in (1, 3):
        for step in ("1", "2"):
            out = torchrun(nproc, "load", path, step)
            assert out.count(f"step {step} ok") == nproc, out
