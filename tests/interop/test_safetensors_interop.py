"""safetensors interop with the Python reference (safetensors 0.8, Rust core).

Files written by the reference are read bit-exactly by tinfo and tconvert; files
written by tconvert are read bit-exactly by the reference and are byte-identical to
what the reference writes for the same tensors and metadata. The malformed corpus is
rejected by tinfo (exit 3) and, except where tensorkit is stricter on purpose, by the
reference too.
"""
import glob
import importlib.util
import json
import os
import struct
import subprocess

import ml_dtypes
import numpy as np
import pytest
from safetensors import TensorSpec, deserialize, safe_open, serialize

BIN = os.environ.get("TK_BIN", "build")
SRC = os.environ.get("TK_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
TESTDATA = os.environ.get("TK_TESTDATA", os.path.join(SRC, "testdata"))
TINFO = os.path.join(BIN, "tinfo")
TCONVERT = os.path.join(BIN, "tconvert")


@pytest.fixture
def tmp(tmp_path):
    return str(tmp_path)


def rng_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def arrays():
    """One array per dtype the reference's numpy API writes, plus 0-rank and empty."""
    rng = np.random.default_rng(7)
    out = {}
    for name, dt in [("bool", np.bool_), ("u8", np.uint8), ("i8", np.int8), ("u16", np.uint16),
                     ("i16", np.int16), ("u32", np.uint32), ("i32", np.int32), ("u64", np.uint64),
                     ("i64", np.int64)]:
        out[name] = rng.integers(0, 2 if dt is np.bool_ else 100, (3, 5)).astype(dt)
    # Floats as random bit patterns: NaN payloads, infinities and subnormals included.
    for name, dt, bits in [("f16", np.float16, np.uint16), ("f32", np.float32, np.uint32),
                           ("f64", np.float64, np.uint64), ("bf16", ml_dtypes.bfloat16, np.uint16),
                           ("f8_e4m3", ml_dtypes.float8_e4m3fn, np.uint8),
                           ("f8_e5m2", ml_dtypes.float8_e5m2, np.uint8),
                           ("f8_e8m0", ml_dtypes.float8_e8m0fnu, np.uint8),
                           ("f8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, np.uint8),
                           ("f8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, np.uint8)]:
        raw = rng_bytes(4 * 6 * np.dtype(bits).itemsize, len(out))
        out[name] = np.frombuffer(raw, dtype=bits).view(dt).reshape(4, 6)
    out["c64"] = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)
    out["scalar"] = np.array(3.25, dtype=np.float32)
    out["empty"] = np.zeros((0, 4), dtype=np.float16)
    return out


def spec_of(arr):
    return TensorSpec(dtype=arr.dtype.name, shape=list(arr.shape), data_ptr=arr.ctypes.data, data_len=arr.nbytes)


def py_write(path, arrs, metadata=None, f4=None):
    """Write with the reference serializer; `f4` maps names to (packed bytes, logical shape)."""
    keep = [np.ascontiguousarray(a) for a in arrs.values()]
    specs = {name: spec_of(a) for name, a in zip(arrs, keep)}
    for name, (raw, shape) in (f4 or {}).items():
        buf = np.frombuffer(raw, dtype=np.uint8).copy()
        keep.append(buf)
        # The reference takes F4 as packed pairs and doubles the last dimension itself.
        storage = list(shape[:-1]) + [shape[-1] // 2]
        specs[name] = TensorSpec(dtype="float4_e2m1fn_x2", shape=storage, data_ptr=buf.ctypes.data, data_len=len(raw))
    data = bytes(serialize(specs, metadata=metadata))
    with open(path, "wb") as f:
        f.write(data)
    return data


def raw_file(tensors, metadata=None):
    """A file laid out as the reference writer lays it out, for dtypes its Python API cannot
    write (F6): `tensors` maps name -> (dtype name, shape, bytes), in storage order."""
    header, offset, data = {}, 0, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def py_read(data):
    """name -> (dtype, shape, bytes) through the reference deserializer."""
    return {name: (v["dtype"], list(v["shape"]), bytes(v["data"])) for name, v in deserialize(data)}


def run(*args, stdin=None, check=True):
    proc = subprocess.run(list(args), input=stdin, capture_output=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
    return proc


def tinfo_json(path):
    doc = json.loads(run(TINFO, "--json", "-", path).stdout)
    return doc["files"][0]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------- reference -> tensorkit

def test_tinfo_reads_reference_files(tmp):
    arrs = arrays()
    path = os.path.join(tmp, "ref.safetensors")
    py_write(path, arrs, metadata={"k": "v"}, f4={"f4": (rng_bytes(6, 1), (3, 4))})
    report = tinfo_json(path)
    assert report["format"] == "safetensors"
    assert report["metadata"] == {"k": "v"}
    got = {t["name"]: (t["dtype"], t["shape"], t["bytes"]) for t in report["tensors"]}
    want = {name: (d, s, len(b)) for name, (d, s, b) in py_read(read_bytes(path)).items()}
    assert got == want
    assert got["f4"] == ("F4", [3, 4], 6)
    # tinfo lists tensors in storage (data offset) order.
    offsets = deserialize_offsets(read_bytes(path))
    assert [t["name"] for t in report["tensors"]] == sorted(got, key=lambda n: (offsets[n], n))


def deserialize_offsets(data):
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: tuple(v["data_offsets"]) for k, v in header.items() if k != "__metadata__"}


@pytest.mark.parametrize("via", ["file", "pipe", "stdout"])
def test_tconvert_copies_reference_files_bit_exactly(tmp, via):
    arrs = arrays()
    src = os.path.join(tmp, "ref.safetensors")
    data = py_write(src, arrs, metadata={"note": "x\ny \u00e9"}, f4={"f4": (rng_bytes(4, 2), (2, 4))})
    out = os.path.join(tmp, "out.safetensors")
    if via == "file":
        run(TCONVERT, src, "-o", out)
        result = read_bytes(out)
    elif via == "pipe":
        run(TCONVERT, "-", "-o", out, stdin=data)
        result = read_bytes(out)
    else:
        result = run(TCONVERT, src, "-o", "-").stdout
    assert py_read(result) == py_read(data)
    md = safe_open_metadata(result, tmp)
    assert md["note"] == "x\ny \u00e9"


def safe_open_metadata(data, tmp):
    path = os.path.join(tmp, "md.safetensors")
    with open(path, "wb") as f:
        f.write(data)
    with safe_open(path, framework="np") as f:
        return f.metadata() or {}


def test_f6_and_unusual_names_round_trip(tmp):
    tensors = {
        "f6_e2m3": ("F6_E2M3", [2, 4], rng_bytes(6, 3)),
        "f6_e3m2": ("F6_E3M2", [4], rng_bytes(3, 4)),
        'quote"back\\slash': ("U8", [2], b"ab"),
        "ctl\x01\n\t": ("I8", [1], b"\x80"),
        "uni\u00e9\u4e2d\U0001f600": ("U16", [1], b"\x01\x02"),
        "": ("BOOL", [1], b"\x01"),
    }
    src = os.path.join(tmp, "f6.safetensors")
    with open(src, "wb") as f:
        f.write(raw_file(tensors))
    assert py_read(read_bytes(src)) == tensors  # the reference accepts the hand-made file
    out = os.path.join(tmp, "out.safetensors")
    run(TCONVERT, src, "-o", out)
    assert py_read(read_bytes(out)) == tensors
    report = tinfo_json(src)
    assert {t["name"] for t in report["tensors"]} == set(tensors)


def test_fnuz_reference_files_read_bit_exactly(tmp):
    # Every code of both FNUZ types, written by the reference's numpy API: tconvert copies
    # them bit-exactly, decodes them to f32 as ml_dtypes does, and encodes f32 back
    # (-0, NaN of either sign, Inf and overflow included) to ml_dtypes' codes.
    from safetensors.numpy import save
    types = {"e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz}
    arrs = {name: np.arange(256, dtype=np.uint8).view(dt) for name, dt in types.items()}
    data = bytes(save(arrs))
    src = os.path.join(tmp, "fnuz.safetensors")
    with open(src, "wb") as f:
        f.write(data)
    want = py_read(data)
    assert want["e4m3fnuz"][0] == "F8_E4M3FNUZ" and want["e5m2fnuz"][0] == "F8_E5M2FNUZ"
    out = os.path.join(tmp, "out.safetensors")
    run(TCONVERT, src, "-o", out)
    assert py_read(read_bytes(out)) == want

    as_f32 = os.path.join(tmp, "f32.safetensors")
    run(TCONVERT, "--dtype", "f32", src, "-o", as_f32)
    got = py_read(read_bytes(as_f32))
    for name, arr in arrs.items():
        expected = arr.astype(np.float32)
        decoded = np.frombuffer(got[name][2], dtype=np.float32)
        assert got[name][0] == "F32"
        assert np.array_equal(np.isnan(decoded), np.isnan(expected)), name
        assert np.array_equal(decoded[~np.isnan(expected)], expected[~np.isnan(expected)]), name
        assert np.isnan(expected).sum() == 1 and np.isnan(expected[0x80])

    values = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e6, -1e6, 1.0, -1.5, 240.0, 248.0,
                       -57344.0, 61440.0, 1e-30, -1e-30, 2.0**-17, -(2.0**-18), 3.1e-3], dtype=np.float32)
    f32_src = os.path.join(tmp, "values.safetensors")
    with open(f32_src, "wb") as f:
        f.write(bytes(save({"v": values})))
    for spelling, dt in [("f8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz), ("e5m2fnuz", ml_dtypes.float8_e5m2fnuz)]:
        enc = os.path.join(tmp, spelling + ".safetensors")
        run(TCONVERT, "--dtype", spelling, f32_src, "-o", enc)
        dtype, shape, raw = py_read(read_bytes(enc))["v"]
        with np.errstate(all="ignore"):
            expected = values.astype(dt).view(np.uint8)
        assert dtype == np.dtype(dt).name.upper().replace("FLOAT8", "F8") and shape == [len(values)]
        assert raw == expected.tobytes(), (spelling, list(raw), list(expected))


# ---------------------------------------------------------------- byte identity

def test_tconvert_output_is_byte_identical_to_reference_writer(tmp):
    arrs = arrays()
    f4 = {"f4": (rng_bytes(8, 5), (4, 4))}
    # Several names per alignment class, to pin down the order within a class.
    for name in ["w.b", "w.a", "z", "A", "a10", "a9"]:
        arrs[name] = np.arange(3, dtype=np.float32) + len(name)
    src = os.path.join(tmp, "ref.safetensors")
    py_write(src, arrs, f4=f4)
    out = os.path.join(tmp, "out.safetensors")
    run(TCONVERT, src, "-o", out, "--drop-metadata", "format")
    ours = read_bytes(out)
    # The reference writing the same tensors and the metadata tconvert recorded (its
    # provenance, one key, so the reference's hash-map order cannot vary).
    metadata = safe_open_metadata(ours, tmp)
    assert list(metadata) == ["tk"]
    theirs = py_write(os.path.join(tmp, "theirs.safetensors"), arrs, metadata=metadata, f4=f4)
    assert ours == theirs


def test_written_metadata_passes_the_transformers_check(tmp):
    # transformers' load_state_dict refuses a safetensors file whose metadata is present
    # but whose "format" is not one of these; every tool that writes metadata adds "pt".
    src = os.path.join(tmp, "ref.safetensors")
    py_write(src, {"w": np.arange(64, dtype=np.float32).reshape(8, 8)}, metadata={"note": "x"})
    outs = {
        "tconvert": [TCONVERT, src],
        "tquant": [os.path.join(BIN, "tquant"), src, "--scheme", "int8", "-q"],
        "tdecomp": [os.path.join(BIN, "tdecomp"), "tucker", src, "--tol", "1e-3", "-q"],
        "tconvert --no-provenance": [TCONVERT, src, "--no-provenance"],
    }
    for label, cmd in outs.items():
        out = os.path.join(tmp, label.replace(" ", "_") + ".safetensors")
        run(*cmd, "-o", out)
        metadata = safe_open_metadata(read_bytes(out), tmp)
        assert metadata is not None and metadata.get("format") in ["pt", "tf", "flax", "mlx"], (label, metadata)
        assert metadata["note"] == "x", label
        assert ("tk" in metadata) == (label != "tconvert --no-provenance"), label


def test_tensor_order_matches_reference_for_every_dtype(tmp):
    # One tensor per dtype with names in reverse alphabetical order of dtypes: the
    # reference orders by its Dtype enum rank (descending), then by name.
    arrs = arrays()
    renamed = {f"t{i:02d}": a for i, a in enumerate(reversed(list(arrs.values())))}
    src = os.path.join(tmp, "ref.safetensors")
    ref = py_write(src, renamed)
    out = os.path.join(tmp, "out.safetensors")
    run(TCONVERT, src, "-o", out)
    ours = read_bytes(out)
    assert list(deserialize_offsets(ours)) == list(deserialize_offsets(ref))


# ---------------------------------------------------------------- malformed files

def load_corpus_script():
    path = os.path.join(SRC, "scripts", "make-malformed-safetensors.py")
    spec = importlib.util.spec_from_file_location("make_malformed", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_corpus_matches_generator(tmp):
    mod = load_corpus_script()
    files = mod.corpus()
    committed = {os.path.basename(p)[:-len(".safetensors")]
                 for p in glob.glob(os.path.join(TESTDATA, "malformed", "st-*.safetensors"))}
    assert committed == set(files)
    for name, data in files.items():
        assert read_bytes(os.path.join(TESTDATA, "malformed", name + ".safetensors")) == data, name


def test_malformed_corpus_rejected_by_tinfo_and_reference():
    mod = load_corpus_script()
    paths = sorted(glob.glob(os.path.join(TESTDATA, "malformed", "*.safetensors")))
    assert len(paths) >= 50
    for path in paths:
        name = os.path.basename(path)[:-len(".safetensors")]
        proc = run(TINFO, path, check=False)
        assert proc.returncode == 3, (name, proc.returncode, proc.stderr)
        lines = proc.stderr.decode(errors="replace").splitlines()
        assert len(lines) == 1 and lines[0].startswith("tinfo: error: "), (name, lines)
        try:
            deserialize(read_bytes(path))
            accepted = True
        except Exception:
            accepted = False
        assert accepted == (name in mod.REFERENCE_ACCEPTS), name
