"""GGUF block-type decoding against the reference gguf-py (gguf.quants.dequantize, a numpy
port of ggml's dequantize_row_*).

For every ggml type that both gguf-py and tensorkit decode, gguf-py writes random blocks
(three rows of two blocks) and tconvert turns the file into safetensors: block types must
come out as F32 equal bit for bit to gguf-py's values, plain types with their own dtype and
their stored bytes. The f16 scale fields are random finite halves (zero, subnormals and
+-65504 included) and E8M0 scales lie in 100..150 plus the extremes, so that no NaN arises;
infinities may (an E8M0 scale of 254 times 12) and are compared like any other value.
"""
import json
import os
import struct

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as Q, GGUFReader, GGUFWriter
from gguf.quants import dequantize
from safetensors.numpy import load_file

from tk_helpers import TCONVERT, ok

# Byte offsets, inside a block, of each f16 field (ggml-common.h's block structs).
HALF_FIELDS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
    Q.IQ4_NL: [0], Q.IQ4_XS: [0], Q.TQ1_0: [52], Q.TQ2_0: [64], Q.MXFP4: [],
    Q.IQ2_XXS: [0], Q.IQ2_XS: [0], Q.IQ2_S: [0], Q.IQ3_XXS: [0], Q.IQ3_S: [0],
}
# Byte offsets of each E8M0 scale.
E8M0_FIELDS = {Q.MXFP4: [0]}
BLOCK_TYPES = list(HALF_FIELDS)
# Plain types that gguf-py dequantizes (it has no path for F64 and the integers).
PLAIN_TYPES = {Q.F32: "F32", Q.F16: "F16", Q.BF16: "BF16"}
ROWS, BLOCKS_PER_ROW, PLAIN_ROW = 3, 2, 64


@pytest.fixture
def tmp(tmp_path):
    return str(tmp_path)


def random_blocks(qtype, seed):
    """ROWS x BLOCKS_PER_ROW blocks of random bytes with sane scale fields, as the (rows,
    row bytes) uint8 array gguf-py takes for raw tensors."""
    rng = np.random.default_rng(seed)
    _, size = GGML_QUANT_SIZES[qtype]
    n = ROWS * BLOCKS_PER_ROW
    raw = rng.integers(0, 256, (n, size), dtype=np.uint8)
    for off in HALF_FIELDS[qtype]:
        h = rng.uniform(-2, 2, n).astype(np.float16)
        h[:4] = [6e-8, -0.0, 65504, -1e-5]
        raw[:, off:off + 2] = h.view(np.uint8).reshape(n, 2)
    for off in E8M0_FIELDS.get(qtype, []):
        e = rng.integers(100, 151, n).astype(np.uint8)
        e[:3] = [0, 1, 254]
        raw[:, off] = e
    return raw.reshape(ROWS, BLOCKS_PER_ROW * size)


def write_gguf(path, name, raw, qtype):
    # For a uint8 array with raw_dtype, raw_shape is the byte shape in numpy order; gguf-py
    # turns it into values and writes the dimensions reversed, as ggml's ne.
    w = GGUFWriter(path, "llama")
    w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def safetensors_entry(path, name):
    """(dtype, shape, bytes) of one tensor, read from the file itself: safetensors' numpy API
    cannot load BF16."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data)
    info = json.loads(data[8:8 + n])[name]
    begin, end = info["data_offsets"]
    return info["dtype"], info["shape"], data[8 + n + begin:8 + n + end]


@pytest.mark.parametrize("qtype", BLOCK_TYPES, ids=lambda t: t.name)
def test_block_types_decode_like_gguf_py(tmp, qtype):
    src, dst = os.path.join(tmp, "in.gguf"), os.path.join(tmp, "out.safetensors")
    raw = random_blocks(qtype, seed=int(qtype))
    write_gguf(src, "w", raw, qtype)
    ok(TCONVERT, src, "-o", dst)
    with np.errstate(over="ignore"):  # the E8M0 scale 254 overflows on purpose
        want = np.ascontiguousarray(dequantize(raw, qtype), dtype=np.float32)
    assert want.shape == (ROWS, BLOCKS_PER_ROW * GGML_QUANT_SIZES[qtype][0])
    assert not np.isnan(want).any()
    got = load_file(dst)["w"]
    assert got.dtype == np.float32
    assert got.shape == want.shape
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, f"{bad.size} of {want.size} values differ, first at {bad[0]}"


# Two rows of an ffn_down weight of SmolLM2-135M in each IQ2/IQ3 type, as llama-quantize
# (with an imatrix) wrote them: blocks a real quantizer makes, beside the random ones above.
TESTDATA = os.environ.get("TK_TESTDATA", os.path.join(os.path.dirname(__file__), "..", "..", "testdata"))
LLAMA_BLOCKS = os.path.join(TESTDATA, "llama-iq-blocks.gguf")


def test_llama_quantize_blocks_decode_like_gguf_py(tmp):
    dst = os.path.join(tmp, "out.safetensors")
    ok(TCONVERT, LLAMA_BLOCKS, "-o", dst)
    got = load_file(dst)
    tensors = GGUFReader(LLAMA_BLOCKS).tensors
    assert sorted(t.tensor_type.name for t in tensors) == ["IQ2_S", "IQ2_XS", "IQ2_XXS", "IQ3_S", "IQ3_XXS"]
    for t in tensors:
        want = np.ascontiguousarray(dequantize(np.array(t.data), t.tensor_type), dtype=np.float32)
        assert got[t.name].shape == want.shape == (2, 1536)
        assert np.array_equal(got[t.name].view(np.uint32), want.view(np.uint32)), t.name


@pytest.mark.parametrize("qtype", list(PLAIN_TYPES), ids=lambda t: t.name)
def test_plain_types_keep_dtype_and_bytes(tmp, qtype):
    src, dst = os.path.join(tmp, "in.gguf"), os.path.join(tmp, "out.safetensors")
    item = GGML_QUANT_SIZES[qtype][1]
    # Random bit patterns: NaN payloads, infinities and subnormals pass through untouched.
    raw = np.random.default_rng(int(qtype)).integers(0, 256, (ROWS, PLAIN_ROW * item), dtype=np.uint8)
    write_gguf(src, "w", raw, qtype)
    ok(TCONVERT, src, "-o", dst)
    dtype, shape, data = safetensors_entry(dst, "w")
    assert dtype == PLAIN_TYPES[qtype]
    assert shape == [ROWS, PLAIN_ROW]
    assert data == raw.tobytes()


def test_types_cover_what_both_decode():
    """A type gguf-py gains a decoder for shows up here, to be added above or listed as
    not decoded by tensorkit."""
    # The IQ1 lattice types, and NVFP4, which tensorkit's type table does not list yet.
    not_in_tensorkit = {"IQ1_S", "IQ1_M", "NVFP4"}
    covered = set(BLOCK_TYPES) | set(PLAIN_TYPES)
    for qtype in Q:
        if qtype in covered or qtype.name in not_in_tensorkit:
            continue
        size = GGML_QUANT_SIZES[qtype][1]
        with pytest.raises(NotImplementedError):
            dequantize(np.zeros((1, size), dtype=np.uint8), qtype)
