"""PyTorch checkpoints (the zip format of torch.save) read without executing them.

testdata/torch holds files that torch itself wrote (scripts/make-testdata-torch.py): a
module's state_dict with tied weights, every dtype tensorkit shares with torch, views
(transposes, slices with offsets, stride-0 expansions, 0-d), nesting through lists and
int keys, pickle protocol 4, a tensor saved on its own, a whole nn.Module and the legacy
format. Each tensor tensorkit lists must equal, bit for bit, the contiguous copy that
torch wrote to expected.safetensors, read here by a parser of its own. When torch is
installed (`make bench-deps`), the same is checked live against the installed version,
and on the real all-MiniLM-L6-v2 weights saved as pytorch_model.bin.
"""
import importlib.util
import json
import os
import struct

import pytest
from tk_helpers import TCONVERT, TINFO, ok, run

TD = os.environ.get("TK_TESTDATA", "testdata")
TORCH_DIR = os.path.join(TD, "torch")
MINILM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv", "models", "all-minilm-l6-v2",
                      "model.safetensors")
HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (make bench-deps installs it)")


def raw_tensors(data):
    """safetensors bytes -> {name: (dtype, shape, bytes)}, parsed without any package."""
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in header.items()}


def expected(stem):
    want = raw_tensors(open(os.path.join(TORCH_DIR, "expected.safetensors"), "rb").read())
    prefix = stem + "."
    return {k[len(prefix):]: v for k, v in want.items() if k.startswith(prefix)}


READABLE = ["state_dict", "dtypes", "views", "protocol4", "lone"]


@pytest.mark.parametrize("stem", READABLE)
def test_torch_written_checkpoints_read_bit_exactly(tmp_path, stem):
    path = os.path.join(TORCH_DIR, stem + ".pt")
    want = expected(stem)
    assert want, stem
    out = tmp_path / "out.safetensors"
    ok(TCONVERT, path, "-o", str(out))
    got = raw_tensors(out.read_bytes())
    assert list(got) == list(want)  # in the checkpoint's order
    for name in want:
        assert got[name] == want[name], name
    # Through a pipe the archive is spooled; the tensors are the same (a lone tensor is
    # named "tensor" there, as a .npy from stdin is).
    piped = raw_tensors(ok(TCONVERT, "-", "-o", "-", stdin=open(path, "rb").read()).stdout)
    assert list(piped.values()) == list(got.values())


def test_values_that_are_not_tensors_are_named():
    r = ok(TINFO, os.path.join(TORCH_DIR, "views.pt"))
    err = r.stderr.decode()
    assert "skipped 'step': an int, not a tensor" in err
    assert "skipped 'name': a string, not a tensor" in err
    assert "skipped 'param_groups': a list without tensors" in err
    assert "pytorch, 7 tensors" in r.stdout.decode()


def test_tied_weights_are_listed_under_both_names(tmp_path):
    out = tmp_path / "sd.safetensors"
    ok(TCONVERT, os.path.join(TORCH_DIR, "state_dict.pt"), "-o", str(out))
    got = raw_tensors(out.read_bytes())
    assert got["embed.weight"] == got["head.weight"]


@pytest.mark.parametrize("stem,message", [
    ("module", "refusing to unpickle 'torch.nn.modules.linear.Linear'"),
    ("legacy", "only the zip format of torch.save (PyTorch 1.6 and later) is read"),
])
def test_files_outside_the_weights_only_subset_are_refused(tmp_path, stem, message):
    r = run(TCONVERT, os.path.join(TORCH_DIR, stem + ".pt"), "-o", str(tmp_path / "x.safetensors"))
    assert r.returncode == 3
    err = r.stderr.decode()
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "x.safetensors").exists()


def test_pt_is_not_an_output_format(tmp_path):
    st = tmp_path / "in.safetensors"
    ok(TCONVERT, os.path.join(TORCH_DIR, "lone.pt"), "-o", str(st))
    r = run(TCONVERT, str(st), "-o", str(tmp_path / "out.pt"))
    assert r.returncode == 2 and "cannot write this format" in r.stderr.decode()


@needs_torch
def test_live_torch_random_checkpoints(tmp_path):
    import torch
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(1)
    state = {}
    for i, dt in enumerate([torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.bool,
                            torch.float8_e5m2]):
        base = torch.randn(5, 7, 3, generator=g) * 4
        t = (base > 0) if dt == torch.bool else base.to(dt)
        state[f"p{i}.contiguous"] = t
        state[f"p{i}.permuted"] = t.permute(2, 0, 1)
        state[f"p{i}.strided"] = t[::2, 1::3]
    path = tmp_path / "live.pt"
    torch.save(state, path)
    ref = tmp_path / "ref.safetensors"
    save_file({k: v.contiguous().clone() for k, v in state.items()}, str(ref))
    out = tmp_path / "out.safetensors"
    ok(TCONVERT, str(path), "-o", str(out))
    assert raw_tensors(out.read_bytes()) == raw_tensors(ref.read_bytes())
    # What torch's own weights-only loader accepts, tensorkit reads, and the reverse.
    assert torch.load(path, weights_only=True).keys() == state.keys()


@needs_torch
@pytest.mark.skipif(not os.path.exists(MINILM), reason="the all-MiniLM-L6-v2 model is not in .venv/models")
def test_real_model_as_pytorch_model_bin(tmp_path):
    import torch
    from safetensors.torch import load_file
    state = load_file(MINILM)
    path = tmp_path / "pytorch_model.bin"
    torch.save(state, path)
    out = tmp_path / "model.safetensors"
    ok(TCONVERT, str(path), "-o", str(out))
    got = raw_tensors(out.read_bytes())
    want = raw_tensors(open(MINILM, "rb").read())
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == want[k], k
    r = ok(TINFO, "diff", str(path), MINILM)
    assert r.returncode == 0
