"""HDF5 interop with h5py (+ hdf5plugin for zstd): files h5py writes are read bit-exactly
by tinfo and tconvert, and the files tconvert writes are read bit-exactly by h5py.

Runs under ctest, which sets TK_BIN (the tool binaries) and TK_TMP (scratch space).
"""
import json
import os
import struct
import subprocess

import h5py
import hdf5plugin
import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

BIN = os.environ.get("TK_BIN", "")
TMP = os.environ.get("TK_TMP", "/tmp")


def tool(name):
    path = os.path.join(BIN, name)
    assert os.access(path, os.X_OK), f"{name} not built in TK_BIN={BIN!r}"
    return path


def run(name, *args, stdin=None):
    proc = subprocess.run([tool(name), *args], input=stdin, capture_output=True)
    assert proc.returncode == 0, f"{name} {' '.join(args)} -> {proc.returncode}: {proc.stderr.decode()}"
    return proc.stdout


def tinfo_json(path):
    doc = json.loads(run("tinfo", "--json", "-", path))
    (entry,) = doc["files"]
    return entry


@pytest.fixture
def workdir(request):
    path = os.path.join(TMP, "hdf5_interop", request.node.name)
    os.makedirs(path, exist_ok=True)
    for f in os.listdir(path):
        os.remove(os.path.join(path, f))
    return path


# safetensors dtype name -> numpy dtype, for the types numpy can hold.
ST_NUMPY = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
    "F16": np.float16, "BF16": ml_dtypes.bfloat16, "F32": np.float32, "F64": np.float64,
    "C64": np.complex64, "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
    "F8_E8M0": ml_dtypes.float8_e8m0fnu, "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}


def read_safetensors(path):
    """{name: (dtype name, shape, raw bytes)} straight from the file layout."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n :]
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0] : v["data_offsets"][1]]) for k, v in header.items()}


def h5py_source_arrays():
    rng = np.random.default_rng(1234)
    arrays = {
        "f16": rng.standard_normal((4, 5)).astype(np.float16),
        "f32": rng.standard_normal((3, 7)).astype(np.float32),
        "f64": rng.standard_normal(9),
        "bool": rng.integers(0, 2, (6,)).astype(np.bool_),
        "c64": (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64),
        "scalar": np.float64(2.5),
        "empty": np.zeros((0, 4), np.int32),
    }
    for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        info = np.iinfo(t)
        arrays[np.dtype(t).name] = rng.integers(info.min, info.max, (2, 3), dtype=t, endpoint=True)
    return arrays


def write_h5py_file(path):
    """A file as HPC codes write it; returns {tensor name: expected little-endian array}."""
    src = h5py_source_arrays()
    expected = {}
    rng = np.random.default_rng(99)
    smooth = np.sin(np.linspace(0, 20, 64 * 48)).reshape(64, 48).astype(np.float32)
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "written by h5py"
        f.attrs["count"] = np.int32(-7)
        f.attrs["ratio"] = np.float64(0.125)
        f.attrs["fixed"] = np.bytes_(b"ascii text")
        for name, arr in src.items():
            group = "scalars" if np.ndim(arr) == 0 else "deep/nested" if name.startswith("f") else "plain"
            f.create_dataset(f"{group}/{name}", data=arr)
            expected[f"{group}/{name}"] = np.asarray(arr)
        f["deep/nested/f32"].attrs["units"] = "m/s"
        # Big-endian storage is converted to little-endian on read.
        f.create_dataset("be/f32", data=src["f32"].astype(">f4"))
        f.create_dataset("be/i32", data=src["int32"].astype(">i4"))
        f.create_dataset("be/f16", data=src["f16"].astype(">f2"))
        expected.update({"be/f32": src["f32"], "be/i32": src["int32"], "be/f16": src["f16"]})
        f.create_dataset("chunked/gzip", data=smooth, chunks=(16, 48), compression="gzip", shuffle=True)
        f.create_dataset("chunked/zstd", data=smooth * 2, chunks=(8, 24), **hdf5plugin.Zstd(clevel=9))
        noise = rng.standard_normal((33, 17)).astype(np.float32)
        f.create_dataset("chunked/partial", data=noise, chunks=(10, 10), compression="gzip")
        expected.update({"chunked/gzip": smooth, "chunked/zstd": smooth * 2, "chunked/partial": noise})
        # Not tensors: skipped and listed in the metadata.
        f.create_dataset("skip/text", data="a string")
        f.create_dataset("skip/c128", data=np.ones(3, np.complex128))
        f.create_dataset("skip/null", data=h5py.Empty("f4"))
        f.create_dataset("skip/record", data=np.zeros(2, dtype=[("x", "f4"), ("y", "i2")]))
    return expected


ST_NAME = {np.dtype(v).name: k for k, v in ST_NUMPY.items()}


def test_h5py_files_read_bit_exactly(workdir):
    h5 = os.path.join(workdir, "h5py.h5")
    expected = write_h5py_file(h5)
    listing = tinfo_json(h5)
    assert listing["format"] == "hdf5"
    got = {t["name"]: t for t in listing["tensors"]}
    assert set(got) == set(expected)
    for name, arr in expected.items():
        assert got[name]["dtype"] == ST_NAME[arr.dtype.newbyteorder("=").name], name
        assert got[name]["shape"] == list(arr.shape), name
    meta = listing["metadata"]
    assert meta["title"] == "written by h5py"
    assert meta["count"] == "-7"
    assert meta["ratio"] == "0.125"
    assert meta["fixed"] == "ascii text"
    assert sorted(meta["hdf5.skipped"].split(",")) == ["skip/c128", "skip/null", "skip/record", "skip/text"]
    assert not any(k.startswith("deep/") for k in meta)  # dataset attributes stay out

    st = os.path.join(workdir, "out.safetensors")
    run("tconvert", h5, "-o", st)
    tensors = read_safetensors(st)
    assert set(tensors) == set(expected)
    for name, arr in expected.items():
        dtype, shape, raw = tensors[name]
        le = arr.astype(arr.dtype.newbyteorder("<"))
        assert dtype == ST_NAME[le.dtype.newbyteorder("=").name], name
        assert shape == list(arr.shape), name
        assert raw == le.tobytes(), name

    # The same file through a pipe (the in-memory file image path).
    with open(h5, "rb") as f:
        piped = json.loads(run("tinfo", "--json", "-", "-", stdin=f.read()))["files"][0]
    assert piped["tensors"] == listing["tensors"]


def safetensors_source():
    rng = np.random.default_rng(4321)
    bits16 = rng.integers(0, 1 << 16, (6, 7), dtype=np.uint16)
    bits16[bits16 & 0x7F80 == 0x7F80] = 0x3F80  # no NaN/Inf in bf16, so float32 values compare exactly
    arrays = {
        "model/embed/weight": rng.standard_normal((8, 4)).astype(np.float32),
        "model/layers/0/bf16": bits16.view(ml_dtypes.bfloat16),
        "model/layers/0/f16": rng.standard_normal((5, 3)).astype(np.float16),
        "model/layers/1/f64": rng.standard_normal(4),
        "ints/i8": rng.integers(-128, 128, 10, dtype=np.int8),
        "ints/u16": rng.integers(0, 1 << 16, 10, dtype=np.uint16),
        "ints/i64": rng.integers(-(1 << 62), 1 << 62, 3, dtype=np.int64),
        "ints/u64": rng.integers(0, 1 << 63, 3, dtype=np.uint64),
        "mask": rng.integers(0, 2, (3, 3)).astype(np.bool_),
        "cplx": (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64),
        "fp8/e4m3": rng.integers(0, 256, (4, 4), dtype=np.uint8).view(ml_dtypes.float8_e4m3fn),
        "fp8/e5m2": rng.integers(0, 256, 9, dtype=np.uint8).view(ml_dtypes.float8_e5m2),
        "fp8/e4m3fnuz": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fnuz),
        "fp8/e5m2fnuz": rng.integers(0, 256, (2, 5), dtype=np.uint8).view(ml_dtypes.float8_e5m2fnuz),
        "scalar": np.array(3.0, np.float32),
        "empty": np.zeros((2, 0), np.float16),
        "smooth": np.repeat(np.linspace(0, 1, 128, dtype=np.float32)[None, :], 256, axis=0),
    }
    return arrays


@pytest.mark.parametrize("compress", [None, "zstd", "zstd:9"])
def test_our_files_read_bit_exactly_by_h5py(workdir, compress):
    arrays = safetensors_source()
    st = os.path.join(workdir, "in.safetensors")
    save_file(arrays, st, metadata={"origin": "interop test", "note": "gr\u00fc\u00df"})
    h5 = os.path.join(workdir, "out.h5")
    run("tconvert", st, "-o", h5, *(["--compress", compress] if compress else []))
    with h5py.File(h5, "r") as f:
        assert f.attrs["origin"] == "interop test"  # str, not bytes
        assert f.attrs["note"] == "gr\u00fc\u00df"
        for name, arr in arrays.items():
            d = f[name]
            assert d.shape == arr.shape, name
            if arr.dtype == ml_dtypes.bfloat16:
                assert d.dtype == np.float32, name  # the committed /bfloat16 type
                assert np.array_equal(d[()], arr.astype(np.float32)), name
            elif arr.dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
                               ml_dtypes.float8_e5m2fnuz):
                assert d.dtype == np.uint8 and d.attrs["tk_dtype"] == ST_NAME[arr.dtype.name], name
                assert d[()].tobytes() == arr.tobytes(), name
            else:
                assert d.dtype == arr.dtype, name
                assert d[()].tobytes() == arr.tobytes(), name
            chunked = d.chunks is not None
            assert chunked == (compress is not None and arr.ndim > 0 and arr.size > 0), name
            if chunked:
                assert 32015 in d._filters or "32015" in d._filters, (name, d._filters)
        assert isinstance(f["bfloat16"], h5py.Datatype)

    # And back: the safetensors file holds the original bytes.
    back = os.path.join(workdir, "back.safetensors")
    run("tconvert", h5, "-o", back)
    tensors = read_safetensors(back)
    for name, arr in arrays.items():
        dtype, shape, raw = tensors[name]
        assert shape == list(arr.shape) and raw == arr.tobytes(), name


def test_zstd_output_is_smaller_and_streams_to_stdout(workdir):
    arrays = {"smooth": np.repeat(np.linspace(0, 1, 256, dtype=np.float32)[None, :], 512, axis=0)}
    st = os.path.join(workdir, "in.safetensors")
    save_file(arrays, st)
    plain, packed = os.path.join(workdir, "plain.h5"), os.path.join(workdir, "zstd.h5")
    run("tconvert", st, "-o", plain)
    run("tconvert", st, "-o", packed, "--compress", "zstd:3")
    assert os.path.getsize(packed) * 4 < os.path.getsize(plain)
    # stdout: the file is built in memory and copied out.
    image = run("tconvert", st, "--format", "hdf5", "--compress", "zstd", "-o", "-")
    piped = os.path.join(workdir, "piped.h5")
    with open(piped, "wb") as f:
        f.write(image)
    with h5py.File(piped, "r") as f:
        assert f["smooth"][()].tobytes() == arrays["smooth"].tobytes()
