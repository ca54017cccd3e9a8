"""GGUF -> safetensors -> GGUF keeps every typed key-value pair.

safetensors metadata holds strings only. tconvert keeps a GGUF input's pairs, typed,
under the metadata key "gguf" (a JSON array, see include/tk/io/gguf_kv_json.h) beside their
display text, and reads them back when it writes GGUF: gguf-py must read the same fields,
types and values bit for bit (64-bit integers past 2^53, NaN payloads, -0.0, strings that
are not UTF-8, arrays of strings), and llama.cpp finds general.architecture again.
"""
import json
import os
import struct

import numpy as np
from gguf import GGUFReader, GGUFValueType as T, GGUFWriter
from safetensors import safe_open

from tk_helpers import BIN, TCONVERT, TINFO, ok

TQUANT = os.path.join(BIN, "tquant")


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


PAIRS = [
    ("test.u8", 255, T.UINT8), ("test.i8", -128, T.INT8), ("test.u16", 65535, T.UINT16),
    ("test.i16", -32768, T.INT16), ("test.u32", 4294967295, T.UINT32), ("test.i32", -2147483648, T.INT32),
    ("test.u64", 18446744073709551615, T.UINT64), ("test.i64", -9223372036854775807, T.INT64),
    ("test.u64_odd", 2**53 + 1, T.UINT64),
    ("test.f32", 0.1, T.FLOAT32), ("test.f64", 0.1, T.FLOAT64), ("test.bool", True, T.BOOL),
    ("test.string", "héllo\n\"quoted\"", T.STRING),
]


def source(path):
    w = GGUFWriter(path, "llama")
    w.add_name("tiny")
    w.add_file_type(0)
    w.add_context_length(64)
    for key, value, vtype in PAIRS:
        w.add_key_value(key, value, vtype)
    w.add_key_value("test.f32_nan", f32(0x7fc00001), T.FLOAT32)
    w.add_key_value("test.f32_negzero", -0.0, T.FLOAT32)
    w.add_key_value("test.f64_inf", float("-inf"), T.FLOAT64)
    # The display text shows 8 tokens: the 10th, made non-UTF-8 below, is only in "gguf".
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "wörld", ""] + [f"t{i}" for i in range(5)] + ["a\x00b"])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, f32(0x7f800001), -0.0, 3.25])
    w.add_array("tokenizer.ggml.token_type", [1, 3, 1, 1, 6, 1, 1, 1, 1, 1])
    w.add_array("test.bools", [True, False, True])
    w.add_key_value("test.u64s", [2**64 - 1, 0, 2**53 + 1], T.ARRAY, sub_type=T.UINT64)
    w.add_tensor("token_embd.weight", np.arange(5 * 32, dtype=np.float32).reshape(5, 32))
    w.add_tensor("output_norm.weight", np.ones(32, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def patch_non_utf8(path):
    """Replace the bytes of "a\\x00b" with three bytes that are not UTF-8 (same length)."""
    with open(path, "r+b") as f:
        data = f.read()
        at = data.index(b"a\x00b")
        f.seek(at)
        f.write(b"\xff\xfe\x80")


def fields(path):
    out = {}
    for name, f in GGUFReader(path).fields.items():
        if name.startswith("GGUF.") or name == "tk":
            continue
        raw = b"".join(np.asarray(f.parts[i]).tobytes() for i in f.data) if f.data else b""
        out[name] = ([int(t) for t in f.types], raw)
    return out


def test_pairs_survive_safetensors(tmp_path):
    src, st, back = str(tmp_path / "in.gguf"), str(tmp_path / "mid.safetensors"), str(tmp_path / "back.gguf")
    source(src)
    patch_non_utf8(src)
    ok(TCONVERT, src, "-o", st)
    assert b"\xff\xfe\x80" in open(src, "rb").read()
    with safe_open(st, "np") as f:
        meta = f.metadata()
    assert meta["tokenizer.ggml.tokens"].startswith("[10 x string: <s>")  # the display text stays
    pairs = json.loads(meta["gguf"])
    by_key = {p["key"]: p for p in pairs}
    assert by_key["test.u64"] == {"key": "test.u64", "type": "u64", "value": "18446744073709551615"}
    assert by_key["test.f32_nan"]["value"] == "0x7fc00001" and by_key["test.f32_negzero"]["value"] == "0x80000000"
    assert by_key["tokenizer.ggml.tokens"]["value"][-1] == {"hex": "fffe80"}
    listing = ok(TINFO, "--metadata", st).stdout.decode()
    assert f"  gguf: [{len(pairs)} typed GGUF key-value pairs, " in listing  # summarised, one line
    r = ok(TCONVERT, st, "-o", back)
    assert b"no model metadata" not in r.stderr
    want, got = fields(src), fields(back)
    assert got == want
    assert GGUFReader(back).fields["general.architecture"].contents() == "llama"


def test_pairs_survive_tquant_and_dequant(tmp_path):
    src, q, back = str(tmp_path / "in.gguf"), str(tmp_path / "q.safetensors"), str(tmp_path / "back.gguf")
    source(src)
    ok(TQUANT, src, "--scheme", "int8", "--no-default-keep", "-o", q)
    ok(TQUANT, "dequant", q, "-o", back)
    want, got = fields(src), fields(back)
    del want["general.file_type"], got["general.file_type"]
    assert got == want
