"""Sharded safetensors models (model.safetensors.index.json + shards, as Hugging Face
writes them) against the Python reference: a model merged into one file by tconvert
holds exactly the union of the tensors the index maps, bit for bit, and the index and
shard metadata; tinfo lists the model as one file; broken indexes exit with code 3.
"""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

BIN = os.environ.get("TK_BIN", "build")
SRC = os.environ.get("TK_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
TESTDATA = os.environ.get("TK_TESTDATA", os.path.join(SRC, "testdata"))
TINFO = os.path.join(BIN, "tinfo")
TCONVERT = os.path.join(BIN, "tconvert")
MODEL = os.path.join(TESTDATA, "sharded")
INDEX = os.path.join(MODEL, "model.safetensors.index.json")


def run(*args):
    return subprocess.run(list(args), capture_output=True)


def ok(*args):
    r = run(*args)
    assert r.returncode == 0, r.stderr.decode()
    return r


def union_of_shards(index_path):
    index = json.load(open(index_path))
    folder = os.path.dirname(index_path)
    tensors = {}
    for shard in sorted(set(index["weight_map"].values())):
        for name, arr in load_file(os.path.join(folder, shard)).items():
            if index["weight_map"].get(name) == shard:
                tensors[name] = arr
    return tensors


def assert_same_tensors(got, want):
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        assert got[name].shape == want[name].shape, name
        assert got[name].tobytes() == want[name].tobytes(), name


@pytest.mark.parametrize("source", [MODEL, INDEX, MODEL + "/"])
def test_committed_model_merges_into_the_union_of_its_shards(tmp_path, source):
    out = str(tmp_path / "merged.safetensors")
    ok(TCONVERT, source, "-o", out)
    want = union_of_shards(INDEX)
    assert len(want) == 7
    assert_same_tensors(load_file(out), want)
    with safe_open(out, "np") as f:
        meta = f.metadata()
    assert meta["format"] == "pt"
    assert meta["total_size"] == "1352"


def write_model(folder, shards, index_metadata, extra=None):
    """Shards: {file: {name: array}}. `extra` tensors are put in the first shard but left
    out of the weight_map (the reference loader ignores such tensors)."""
    os.makedirs(folder, exist_ok=True)
    weight_map = {}
    for i, (file, tensors) in enumerate(shards.items()):
        stored = dict(tensors)
        if i == 0 and extra:
            stored.update(extra)
        save_file(stored, os.path.join(folder, file), metadata={"format": "pt", "shard": str(i)})
        weight_map.update({name: file for name in tensors})
    path = os.path.join(folder, "model.safetensors.index.json")
    with open(path, "w") as f:
        json.dump({"metadata": index_metadata, "weight_map": weight_map}, f, indent=2)
    return path


def test_generated_three_shard_model(tmp_path):
    rng = np.random.default_rng(5)
    shards = {
        "model-00001-of-00003.safetensors": {
            "embed": rng.standard_normal((32, 16)).astype(np.float32),
            "mask": rng.integers(0, 2, (4, 4)).astype(bool),
        },
        "model-00002-of-00003.safetensors": {
            "layer.0.w": rng.standard_normal((16, 16)).astype(np.float16),
            "layer.0.ids": rng.integers(-9, 9, (5,)).astype(np.int32),
            "layer.0.empty": np.zeros((0, 3), np.float64),
        },
        "model-00003-of-00003.safetensors": {
            "head": rng.integers(0, 255, (3, 7)).astype(np.uint8),
            "scale": np.array(0.125, np.float64),
        },
    }
    folder = str(tmp_path / "model")
    index = write_model(folder, shards, {"total_size": 12345, "total_parameters": 999},
                        extra={"orphan": np.ones(3, np.float32)})
    out = str(tmp_path / "merged.safetensors")
    ok(TCONVERT, folder, "-o", out)
    want = {name: arr for tensors in shards.values() for name, arr in tensors.items()}
    assert_same_tensors(load_file(out), want)  # "orphan" is not in the weight_map
    with safe_open(out, "np") as f:
        meta = f.metadata()
    assert meta["total_size"] == "12345"
    assert meta["total_parameters"] == "999"
    assert meta["format"] == "pt"
    assert meta["shard"] == "0"  # the first shard's value wins over later shards'

    # tinfo lists the model as one file, shard by shard in storage order.
    report = json.loads(ok(TINFO, "--json", "-", index).stdout)
    (f,) = report["files"]
    assert f["format"] == "sharded"
    names = [t["name"] for t in f["tensors"]]
    assert sorted(names) == sorted(want)
    first = [n for n in names if n in shards["model-00001-of-00003.safetensors"]]
    assert names[: len(first)] == first


def test_select_tensors_from_a_sharded_model(tmp_path):
    out = str(tmp_path / "head.npy")
    ok(TCONVERT, MODEL, "-t", "lm_head.weight", "-o", out)
    want = union_of_shards(INDEX)["lm_head.weight"]
    assert np.load(out).tobytes() == want.tobytes()


def broken_copy(tmp_path, edit):
    folder = str(tmp_path / "broken")
    shutil.copytree(MODEL, folder)
    path = os.path.join(folder, "model.safetensors.index.json")
    index = json.load(open(path))
    edit(index, folder)
    with open(path, "w") as f:
        json.dump(index, f)
    return folder


@pytest.mark.parametrize("case,message", [
    ("missing_shard", "shard 'model-00002-of-00002.safetensors' listed in the index does not exist"),
    ("missing_tensor", "tensor 'ghost' listed in the index is missing from shard 'model-00001-of-00002.safetensors'"),
    ("traversal", "shard '../sharded/model-00001-of-00002.safetensors' of tensor 'step' is not a plain file name"),
    ("absolute", "is not a plain file name in the index's directory"),
    ("duplicate", "tensor 'step' is stored in both shard 'model-00001-of-00002.safetensors' and shard "
                  "'model-00002-of-00002.safetensors'"),
])
def test_broken_models_exit_3(tmp_path, case, message):
    def edit(index, folder):
        wm = index["weight_map"]
        if case == "missing_shard":
            os.remove(os.path.join(folder, "model-00002-of-00002.safetensors"))
        elif case == "missing_tensor":
            wm["ghost"] = "model-00001-of-00002.safetensors"
        elif case == "traversal":
            wm["step"] = "../sharded/model-00001-of-00002.safetensors"
        elif case == "absolute":
            wm["step"] = os.path.abspath(os.path.join(MODEL, "model-00002-of-00002.safetensors"))
        elif case == "duplicate":
            shard1 = os.path.join(folder, "model-00001-of-00002.safetensors")
            tensors = load_file(shard1)
            tensors["step"] = np.array(1, np.int64)
            save_file(tensors, shard1)
    folder = broken_copy(tmp_path, edit)
    for target in [folder, os.path.join(folder, "model.safetensors.index.json")]:
        r = run(TINFO, target)
        assert r.returncode == 3, r.stderr
        assert message in r.stderr.decode()
        r = run(TCONVERT, target, "-o", str(tmp_path / "out.safetensors"))
        assert r.returncode == 3
        assert not os.path.exists(tmp_path / "out.safetensors")


def test_directory_without_a_single_model_exits_3(tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    save_file({"a": np.zeros(1, np.float32)}, str(folder / "a.safetensors"))
    save_file({"b": np.zeros(1, np.float32)}, str(folder / "b.safetensors"))
    r = run(TINFO, str(folder))
    assert r.returncode == 3
    assert "several .safetensors files and no index in directory: a.safetensors, b.safetensors" in r.stderr.decode()
    os.remove(folder / "b.safetensors")
    report = json.loads(ok(TINFO, "--json", "-", str(folder)).stdout)
    assert [t["name"] for t in report["files"][0]["tensors"]] == ["a"]


def hf_style_shards(sizes, max_bytes):
    """The shard of each tensor by the rule huggingface_hub's split_state_dict_into_shards
    applies: in order, a new shard when the next tensor would not fit (a larger one alone)."""
    shards, used = [[]], 0
    for name, nbytes in sizes:
        if shards[-1] and used + nbytes > max_bytes:
            shards.append([])
            used = 0
        shards[-1].append(name)
        used += nbytes
    return shards


def test_max_shard_size_writes_an_index_as_transformers_does(tmp_path):
    rng = np.random.default_rng(5)
    tensors = {f"layer.{i}.w": rng.normal(size=(64, 32 + 8 * i)).astype(np.float32) for i in range(6)}
    tensors["big"] = rng.normal(size=(128, 128)).astype(np.float32)  # 64 KiB: over the shard size alone
    tensors["ids"] = np.arange(100, dtype=np.int64)
    src = tmp_path / "src.safetensors"
    save_file(tensors, str(src), metadata={"format": "pt"})
    out = tmp_path / "out"
    out.mkdir()
    ok(TCONVERT, str(src), "--max-shard-size", "40KB", "-o", str(out / "model.safetensors"))

    index = json.load(open(out / "model.safetensors.index.json"))
    assert set(index) == {"metadata", "weight_map"}
    assert list(index["weight_map"]) == sorted(tensors), "weight_map sorted by name"
    assert index["metadata"]["total_size"] == sum(a.nbytes for a in tensors.values())
    files = sorted(set(index["weight_map"].values()))
    n = len(files)
    assert files == [f"model-{k:05d}-of-{n:05d}.safetensors" for k in range(1, n + 1)]
    assert not (out / "model.safetensors").exists()
    # The assignment follows the declared order (the source's data order) as
    # huggingface_hub assigns it.
    raw = open(src, "rb").read()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    order = sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
    want = hf_style_shards([(k, tensors[k].nbytes) for k in order], 40000)
    got = [[k for k in order if index["weight_map"][k] == f] for f in files]
    assert got == want
    # Every shard is plain safetensors that the reference reads, with the metadata.
    union = union_of_shards(str(out / "model.safetensors.index.json"))
    assert set(union) == set(tensors)
    for name, arr in tensors.items():
        assert union[name].dtype == arr.dtype and np.array_equal(union[name], arr), name
    for f in files:
        with safe_open(str(out / f), "np") as s:
            assert s.metadata()["format"] == "pt"
    # tensorkit reads the model back as one file, bit for bit.
    ok(TINFO, "diff", str(src), str(out))
    # A model that fits one shard is one file, with no index.
    one = tmp_path / "one"
    one.mkdir()
    ok(TCONVERT, str(src), "--max-shard-size", "1GB", "-o", str(one / "model.safetensors"))
    assert sorted(os.listdir(one)) == ["model.safetensors"]
    # Existing shards are kept without -f.
    r = run(TCONVERT, str(src), "--max-shard-size", "40KB", "-o", str(out / "model.safetensors"))
    assert r.returncode == 2 and b"use -f" in r.stderr
    ok(TCONVERT, str(src), "--max-shard-size", "40KB", "-f", "-o", str(out / "model.safetensors"))
