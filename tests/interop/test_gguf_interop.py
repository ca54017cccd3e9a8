"""GGUF interop with the reference package gguf-py (llama.cpp's own reader and writer).

Files written by gguf-py are read by tinfo and tconvert (plain tensors bit for bit, every
key-value pair with its type); tconvert from GGUF to GGUF keeps every pair and every
tensor's type and stored bytes, block types included; GGUF written by tensorkit from
safetensors is read by gguf-py. Block-type decoding is tested in
test_gguf_dequant_interop.py.
"""
import json
import os

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from safetensors.numpy import load_file, save_file

from tk_helpers import TCONVERT, TINFO, ok, run


@pytest.fixture
def tmp(tmp_path):
    return str(tmp_path)


def reference_file(path, alignment=None):
    """A gguf-py file with pairs of several types and tensors of plain and block types."""
    w = GGUFWriter(path, "llama")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_uint32("llama.block_count", 2)
    w.add_float32("llama.rope.freq_base", 10000.5)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_string("general.name", "tiny test model")
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "hello", "wörld"])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.25, 3.0])
    w.add_key_value("test.i64", -7, GGUFValueType.INT64)
    rng = np.random.default_rng(3)
    tensors = {
        "token_embd.weight": rng.standard_normal((6, 64)).astype(np.float32),
        "blk.0.attn_norm.weight": rng.standard_normal(64).astype(np.float16),
        "blk.0.ids": rng.integers(-100, 100, (2, 3, 4)).astype(np.int32),
        "blk.0.bytes": rng.integers(-128, 127, 40).astype(np.int8),
    }
    for name, a in tensors.items():
        w.add_tensor(name, a)
    # Q8_0 blocks: f16 scale then 32 int8, as raw bytes (2 rows of 2 blocks).
    q = rng.integers(0, 256, (2, 68), dtype=np.uint8)
    q[:, 0:2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
    q[:, 34:36] = np.frombuffer(np.float16(-0.25).tobytes(), np.uint8)
    w.add_tensor("blk.0.attn_q.weight", q, raw_shape=q.shape, raw_dtype=GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tensors, q


def field_values(reader):
    """Every pair as (type list, value), the way gguf-py decodes it."""
    out = {}
    for name, f in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        value = f.contents()
        out[name] = ([int(t) for t in f.types], value)
    return out


def test_reads_reference_file_bit_exactly(tmp):
    src = os.path.join(tmp, "ref.gguf")
    tensors, q = reference_file(src)
    listing = json.loads(ok(TINFO, "--json", "-", src).stdout)["files"][0]
    assert listing["format"] == "gguf"
    by_name = {t["name"]: t for t in listing["tensors"]}
    assert by_name["blk.0.attn_q.weight"]["ggml_type"] == "Q8_0"
    assert by_name["blk.0.attn_q.weight"]["shape"] == [2, 64]
    assert by_name["blk.0.attn_q.weight"]["dtype"] == "F32"
    assert by_name["blk.0.ids"]["shape"] == [2, 3, 4]
    assert listing["metadata"]["general.architecture"] == "llama"
    assert listing["metadata"]["llama.block_count"] == "2"
    assert listing["metadata"]["tokenizer.ggml.tokens"].startswith("[4 x string: <s>, </s>")

    for how in ("path", "pipe"):
        out = os.path.join(tmp, f"out-{how}.safetensors")
        if how == "path":
            ok(TCONVERT, src, "-o", out)
        else:
            with open(src, "rb") as f:
                ok(TCONVERT, "-", "-o", out, stdin=f.read())
        got = load_file(out)
        for name, a in tensors.items():
            assert got[name].dtype == a.dtype and got[name].shape == a.shape, name
            assert got[name].tobytes() == a.tobytes(), name
        d = np.frombuffer(q.tobytes(), np.uint8).reshape(4, 34)
        want = (np.frombuffer(d[:, :2].tobytes(), np.float16).astype(np.float32)[:, None]
                * d[:, 2:].view(np.int8).astype(np.float32)).reshape(2, 64)
        assert got["blk.0.attn_q.weight"].tobytes() == want.tobytes()


@pytest.mark.parametrize("alignment", [None, 64])
def test_gguf_to_gguf_keeps_pairs_types_and_stored_bytes(tmp, alignment):
    src = os.path.join(tmp, "ref.gguf")
    reference_file(src, alignment)
    dst = os.path.join(tmp, "copy.gguf")
    ok(TCONVERT, src, "-o", dst)
    a, b = GGUFReader(src), GGUFReader(dst)
    fa, fb = field_values(a), field_values(b)
    assert "tk" in fb  # tensorkit's provenance, as a string
    del fb["tk"]
    # A model gets general.file_type naming what it holds (here mostly F32: ALL_F32).
    assert fb.pop("general.file_type") == ([4], 0)
    assert fa == fb
    assert [t.name for t in a.tensors] == [t.name for t in b.tensors]
    for ta, tb in zip(a.tensors, b.tensors):
        if ta.name == "blk.0.attn_norm.weight":  # F16 norms crash llama.cpp: widened to F32
            assert tb.tensor_type == GGMLQuantizationType.F32
            assert tb.data.tobytes() == np.asarray(ta.data).astype(np.float32).tobytes()
            continue
        assert ta.tensor_type == tb.tensor_type, ta.name
        assert list(ta.shape) == list(tb.shape), ta.name
        assert ta.data.tobytes() == tb.data.tobytes(), ta.name
    if alignment:
        assert b.alignment == alignment


def test_selection_and_cast_into_gguf(tmp):
    src = os.path.join(tmp, "ref.gguf")
    tensors, _ = reference_file(src)
    dst = os.path.join(tmp, "f16.gguf")
    ok(TCONVERT, src, "-t", "token_embd.weight", "-t", "blk.0.attn_q.weight", "--dtype", "f16", "-o", dst)
    b = GGUFReader(dst)
    assert {t.name: t.tensor_type for t in b.tensors} == {"token_embd.weight": GGMLQuantizationType.F16,
                                                          "blk.0.attn_q.weight": GGMLQuantizationType.F16}
    emb = next(t for t in b.tensors if t.name == "token_embd.weight")
    assert emb.data.tobytes() == tensors["token_embd.weight"].astype(np.float16).tobytes()
    assert b.fields["general.architecture"].contents() == "llama"


def test_safetensors_to_gguf_read_by_reference(tmp):
    rng = np.random.default_rng(5)
    arrays = {"w": rng.standard_normal((3, 8)).astype(np.float32),
              "h": rng.standard_normal(16).astype(np.float16),
              "i": rng.integers(-5, 5, (2, 2)).astype(np.int64)}
    src = os.path.join(tmp, "in.safetensors")
    save_file(arrays, src, metadata={"note": "kept as a string"})
    dst = os.path.join(tmp, "out.gguf")
    r = ok(TCONVERT, src, "-o", dst)
    assert b"no model metadata" in r.stderr
    g = GGUFReader(dst)
    assert "general.architecture" not in g.fields
    assert g.fields["note"].contents() == "kept as a string"
    got = {t.name: t for t in g.tensors}
    arrays["h"] = arrays["h"].astype(np.float32)  # 1-D: llama.cpp reads it only as F32
    for name, a in arrays.items():
        assert got[name].data.tobytes() == a.tobytes(), name
        assert list(got[name].shape) == list(reversed(a.shape)), name


def test_unholdable_dtypes_and_names_are_refused(tmp):
    src = os.path.join(tmp, "u8.safetensors")
    save_file({"codes": np.zeros(4, np.uint8)}, src)
    r = run(TCONVERT, src, "-o", os.path.join(tmp, "x.gguf"))
    assert r.returncode == 2 and b"GGUF holds" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(tmp, "x.gguf"))
    save_file({"n" * 64: np.zeros(4, np.float32)}, src)
    r = run(TCONVERT, src, "-o", os.path.join(tmp, "x.gguf"))
    assert r.returncode == 2 and b"at most 63 bytes" in r.stderr, r.stderr
