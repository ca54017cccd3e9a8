""".npy interop with NumPy (np.save / np.load, numpy.lib.format).

Files NumPy writes (every dtype tensorkit shares with it, C and Fortran order, little-
and big-endian, 0-rank, empty, format versions 1.0, 2.0 and 3.0) are read bit-exactly
by tconvert and tinfo; the .npy files tconvert writes are byte-identical to np.save of
the same array; dtypes and files NumPy or tensorkit cannot share are refused with the
documented exit code and message.
"""
import io
import json
import math
import os

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tk_helpers import TCONVERT, TINFO, ok, run, sample

DTYPES = ["?", "u1", "i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8", "<c8"]


def np_save_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def canonical(arr):
    """What tensorkit holds for `arr`: C order, little-endian."""
    return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"))


def to_safetensors(tmp_path, npy_path):
    out = str(tmp_path / "out.safetensors")
    ok(TCONVERT, npy_path, "-f", "-o", out)
    return load_file(out)


VARIANTS = {
    "c": lambda a: a,
    "fortran": lambda a: np.asfortranarray(a),
    "big": lambda a: a.astype(a.dtype.newbyteorder(">")),
    "big_fortran": lambda a: np.asfortranarray(a.astype(a.dtype.newbyteorder(">"))),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_np_save_is_read_bit_exactly(tmp_path, dtype, variant):
    arr = VARIANTS[variant](sample(dtype, (3, 4, 5), seed=DTYPES.index(dtype)))
    path = str(tmp_path / "w.npy")
    np.save(path, arr)
    if variant.startswith("big") and arr.dtype.itemsize > 1:
        assert open(path, "rb").read(64).find(b"'>") > 0  # really a big-endian file
    if variant.endswith("fortran"):
        assert b"'fortran_order': True" in open(path, "rb").read(128)
    got = to_safetensors(tmp_path, path)
    assert list(got) == ["w"]
    want = canonical(arr)
    assert got["w"].dtype == want.dtype
    assert got["w"].shape == want.shape
    assert got["w"].tobytes() == want.tobytes()


@pytest.mark.parametrize("shape", [(), (0,), (0, 4), (4, 0, 3), (1,), (7,), (2, 3)])
def test_zero_rank_and_empty(tmp_path, shape):
    arr = sample("<f4", shape)
    path = str(tmp_path / "z.npy")
    np.save(path, arr)
    got = to_safetensors(tmp_path, path)["z"]
    assert got.shape == shape
    assert got.tobytes() == arr.tobytes()


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_format_versions(tmp_path, version):
    arr = sample("<i8", (5, 2))
    path = str(tmp_path / "v.npy")
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.asfortranarray(arr), version=version)
    assert open(path, "rb").read(8)[6:8] == bytes(version)
    assert to_safetensors(tmp_path, path)["v"].tobytes() == arr.tobytes()


SHAPES = [(), (0,), (1,), (7,), (3, 5), (10**12, 0), (0, 10**12), (2, 3, 4), (1,) * 10, (9,) * 3,
          (123456, 0, 7), (1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2), (11,) * 25]


@pytest.mark.parametrize("dtype", DTYPES)
def test_written_npy_is_byte_identical_to_np_save(tmp_path, dtype):
    for i, shape in enumerate(SHAPES):
        if math.prod(shape) > 10**6:
            continue
        arr = sample(dtype, shape, seed=i)
        src = str(tmp_path / "in.safetensors")
        save_file({"x": arr}, src)
        out = str(tmp_path / "x.npy")
        ok(TCONVERT, src, "-f", "-o", out)
        mine = open(out, "rb").read()
        assert mine == np_save_bytes(arr), (dtype, shape)
        back = np.load(out)
        assert back.dtype == arr.dtype and back.shape == arr.shape
        assert back.tobytes() == arr.tobytes()


def test_npy_to_npy_normalises_like_np_save(tmp_path):
    # A Fortran-order big-endian file comes out as np.save writes the C-order
    # little-endian array.
    arr = sample("<f8", (4, 3, 2))
    src = str(tmp_path / "src.npy")
    np.save(src, np.asfortranarray(arr.astype(">f8")))
    out = str(tmp_path / "out.npy")
    ok(TCONVERT, src, "-o", out)
    assert open(out, "rb").read() == np_save_bytes(arr)


def test_stdin_and_stdout(tmp_path):
    arr = sample("<u2", (6, 7))
    src = str(tmp_path / "a.npy")
    np.save(src, np.asfortranarray(arr))
    out = str(tmp_path / "s.safetensors")
    with open(src, "rb") as f:
        ok(TCONVERT, "-", "-o", out, stdin=f)
    got = load_file(out)
    assert list(got) == ["tensor"]
    assert got["tensor"].tobytes() == arr.tobytes()
    # Through a pipe in both directions, byte-identical to np.save.
    with open(src, "rb") as f:
        r = ok(TCONVERT, "-", "--format", "npy", "-o", "-", stdin=f)
    assert r.stdout == np_save_bytes(arr)


def test_tinfo_json_describes_npy(tmp_path):
    path = str(tmp_path / "weights.npy")
    np.save(path, np.asfortranarray(sample(">i4", (2, 9))))
    report = json.loads(ok(TINFO, "--json", "-", path).stdout)
    (f,) = report["files"]
    assert f["format"] == "npy"
    assert f["tensors"] == [{"name": "weights", "dtype": "I32", "shape": [2, 9], "bytes": 72}]


@pytest.mark.parametrize("dtype,descr", [("<c16", "<c16"), (">c16", ">c16"), ("<U3", "<U3"), ("V2", "|V2"),
                                         ("<M8[s]", "<M8[s]"), ("<f16", "<f16")])
def test_unsupported_dtypes_are_refused(tmp_path, dtype, descr):
    path = str(tmp_path / "u.npy")
    np.save(path, np.zeros(3, dtype=dtype))
    r = run(TINFO, path)
    assert r.returncode == 3
    assert f"unsupported .npy dtype '{descr}'" in r.stderr.decode()


def test_structured_and_object_arrays_are_refused(tmp_path):
    path = str(tmp_path / "s.npy")
    np.save(path, np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]))
    r = run(TINFO, path)
    assert r.returncode == 3
    assert "unsupported .npy dtype '[('a', '<i4'), ('b', '<f8')]'" in r.stderr.decode()
    path = str(tmp_path / "o.npy")
    np.save(path, np.array([1, "x"], dtype=object), allow_pickle=True)
    r = run(TINFO, path)
    assert r.returncode == 3
    assert "unsupported .npy dtype '|O'" in r.stderr.decode()


def test_one_tensor_per_npy_and_no_bf16(tmp_path):
    src = str(tmp_path / "two.safetensors")
    save_file({"a": np.zeros(2, np.float32), "b": np.ones(3, np.float32)}, src)
    out = str(tmp_path / "o.npy")
    r = run(TCONVERT, src, "-o", out)
    assert r.returncode == 2
    assert "a .npy file holds one tensor (got 2); select one with -t" in r.stderr.decode()
    assert not os.path.exists(out)
    ok(TCONVERT, src, "-t", "b", "-o", out)
    assert open(out, "rb").read() == np_save_bytes(np.ones(3, np.float32))

    bf = sample(ml_dtypes.bfloat16, (4, 4))
    bsrc = str(tmp_path / "bf.safetensors")
    save_file({"w": bf}, bsrc)
    r = run(TCONVERT, bsrc, "-f", "-o", out)
    assert r.returncode == 2
    assert "dtype BF16 cannot be stored in .npy" in r.stderr.decode()
    assert "--dtype f32" in r.stderr.decode()
    ok(TCONVERT, bsrc, "--dtype", "f32", "-f", "-o", out)
    np.testing.assert_array_equal(np.load(out), bf.astype(np.float32))


def test_corrupt_files_exit_3(tmp_path):
    good = np_save_bytes(sample("<f4", (3, 3)))
    for cut in [0, 5, 8, 9, 10, 60, len(good) - 36, len(good) - 1]:
        path = str(tmp_path / "c.npy")
        open(path, "wb").write(good[:cut])
        r = run(TINFO, "--stats", path)
        assert r.returncode == 3, (cut, r.stderr)
    path = str(tmp_path / "t.npy")
    open(path, "wb").write(good + b"\0")
    assert run(TINFO, path).returncode == 3
