""".npz interop with NumPy (np.savez, np.savez_compressed, np.load).

Archives NumPy writes, stored and deflated, with every dtype tensorkit shares with it and
the layouts .npy allows (Fortran order, big-endian, 0-rank, empty), are read bit-exactly;
the .npz files tconvert writes load in np.load with the same arrays, have each array's
data at a multiple of 64 bytes, and come out the same byte for byte from the same input.
"""
import io
import os
import struct
import zipfile

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load, load_file, save_file
from tk_helpers import TCONVERT, TINFO, ok, run, sample

DTYPES = ["?", "u1", "i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8", "<c8"]


def canonical(a):
    """What tensorkit holds for `a`: C order, little-endian (np.ascontiguousarray would make a 0-d array 1-d)."""
    a = np.asarray(a)
    return np.asarray(a, order="C").astype(a.dtype.newbyteorder("<"))


def arrays():
    out = {f"a{i}": sample(d, (3, 4), seed=i) for i, d in enumerate(DTYPES)}
    out["fortran"] = np.asfortranarray(sample("<f4", (5, 3), seed=20))
    out["big"] = sample("<i4", (6,), seed=21).astype(">i4")
    out["scalar"] = np.float64(2.5)
    out["empty"] = np.zeros((0, 7), np.float32)
    out["layer/0.weight"] = sample("<f2", (2, 2), seed=22)
    return out


@pytest.mark.parametrize("compressed", [False, True])
def test_np_savez_is_read_bit_exactly(tmp_path, compressed):
    src = arrays()
    path = str(tmp_path / "in.npz")
    (np.savez_compressed if compressed else np.savez)(path, **src)
    out = str(tmp_path / "out.safetensors")
    ok(TCONVERT, path, "-o", out)
    got = load_file(out)
    assert sorted(got) == sorted(src)
    for k, a in src.items():
        want = canonical(a)
        assert got[k].dtype == want.dtype and got[k].shape == want.shape, k
        assert got[k].tobytes() == want.tobytes(), k
    # Through a pipe too (the archive is spooled to a temporary file).
    piped = load(ok(TCONVERT, "-", "-o", "-", stdin=open(path, "rb").read()).stdout)
    assert {k: v.tobytes() for k, v in piped.items()} == {k: v.tobytes() for k, v in got.items()}


def test_written_npz_loads_in_numpy(tmp_path):
    src = {k: canonical(v) for k, v in arrays().items()}
    st = str(tmp_path / "in.safetensors")
    save_file({k: np.asarray(v) for k, v in src.items()}, st)
    out = str(tmp_path / "out.npz")
    ok(TCONVERT, st, "-o", out)
    with np.load(out) as z:
        assert sorted(z.files) == sorted(src)
        for k, a in src.items():
            assert z[k].dtype == a.dtype and z[k].shape == np.shape(a), k
            assert z[k].tobytes() == np.asarray(a).tobytes(), k
    # Every array's data starts at a multiple of 64 bytes of the file.
    raw = open(out, "rb").read()
    with zipfile.ZipFile(out) as z:
        for info in z.infolist():
            h = info.header_offset
            name_len, extra_len = struct.unpack("<HH", raw[h + 26:h + 30])
            entry = h + 30 + name_len + extra_len
            header_len = struct.unpack("<H", raw[entry + 8:entry + 10])[0]
            assert (entry + 10 + header_len) % 64 == 0, info.filename
    # The same input gives the same bytes, and .npz to .npz keeps them.
    again = str(tmp_path / "again.npz")
    ok(TCONVERT, st, "-o", again)
    assert open(again, "rb").read() == raw
    ok(TCONVERT, out, "-o", str(tmp_path / "copy.npz"))
    assert open(tmp_path / "copy.npz", "rb").read() == raw
    # To stdout, by --format.
    r = ok(TCONVERT, st, "-o", "-", "--format", "npz")
    assert r.stdout == raw


def test_npz_refuses_dtypes_numpy_lacks(tmp_path):
    st = str(tmp_path / "bf.safetensors")
    save_file({"w": np.zeros(4, ml_dtypes.bfloat16)}, st)
    r = run(TCONVERT, st, "-o", str(tmp_path / "bf.npz"))
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.count("\n") == 1 and "BF16 cannot be stored in .npz" in err and "--dtype f32" in err
    assert not os.path.exists(tmp_path / "bf.npz")
    ok(TCONVERT, st, "--dtype", "f32", "-o", str(tmp_path / "bf.npz"))
    assert np.load(tmp_path / "bf.npz")["w"].dtype == np.float32


def test_entries_that_are_not_arrays_are_named(tmp_path):
    path = str(tmp_path / "mixed.npz")
    buf = io.BytesIO()
    np.save(buf, np.arange(3, dtype=np.int16))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", buf.getvalue())
        z.writestr("README.txt", "notes")
    r = ok(TINFO, path)
    assert "npz, 1 tensor" in r.stdout.decode()
    assert "skipped 'README.txt': not a .npy entry" in r.stderr.decode()
