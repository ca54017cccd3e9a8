"""GGUF outputs that llama.cpp loads: tensor types per role and general.file_type.

A small llama-shaped model is written with gguf-py's GGUFWriter as llama.cpp's converter
writes it (F16 matrices, F32 norms). Every tool path that writes GGUF must keep the norms
(1-D) in F32, whatever --dtype or --scheme asks (llama.cpp's graph adds F32 activations
to them and aborts on F16), and write general.file_type as the LLAMA_FTYPE of what the
file holds (gguf-py's LlamaFileType), not the input's. Rows that are not whole 256-blocks
take llama-quantize's fallback types (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0,
Q2_K/Q3_K -> IQ4_NL), with one notice per reason.
"""
import os

import numpy as np
from gguf import GGMLQuantizationType as Q, GGUFReader, GGUFWriter, LlamaFileType as F

from tk_helpers import BIN, TCONVERT, ok

TQUANT = os.path.join(BIN, "tquant")

EMBD, FFN, VOCAB = 256, 576, 320
NORMS = ["blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "output_norm.weight"]
MATRICES = ["blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight",
            "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight"]
WIDE = "blk.0.ffn_down.weight"  # rows of 576 values: not whole 256-blocks


def llama_gguf(path, norm_dtype=np.float32):
    rng = np.random.default_rng(5)
    w = GGUFWriter(path, "llama")
    w.add_name("tiny")
    w.add_context_length(64)
    w.add_embedding_length(EMBD)
    w.add_feed_forward_length(FFN)
    w.add_block_count(1)
    w.add_head_count(4)
    w.add_file_type(int(F.MOSTLY_F16))
    w.add_tokenizer_model("llama")
    w.add_token_list([f"t{i}" for i in range(VOCAB)])
    shapes = {"token_embd.weight": (VOCAB, EMBD), "output.weight": (VOCAB, EMBD), WIDE: (EMBD, FFN),
              "blk.0.ffn_gate.weight": (FFN, EMBD), "blk.0.ffn_up.weight": (FFN, EMBD)}
    for name in ["blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight"]:
        shapes[name] = (EMBD, EMBD)
    for name in NORMS:
        w.add_tensor(name, (1 + 0.1 * rng.standard_normal(EMBD)).astype(norm_dtype))
    for name, shape in shapes.items():
        w.add_tensor(name, rng.standard_normal(shape).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def types(path):
    r = GGUFReader(path)
    file_type = int(r.fields["general.file_type"].parts[-1][0]) if "general.file_type" in r.fields else None
    return {t.name: Q(t.tensor_type) for t in r.tensors}, file_type


def assert_norms_f32(got):
    for name in NORMS:
        assert got[name] == Q.F32, (name, got[name])


def test_dtype_f16_keeps_norms_f32(tmp_path):
    src, out = str(tmp_path / "in.gguf"), str(tmp_path / "f16.gguf")
    llama_gguf(src)
    ok(TCONVERT, src, "--dtype", "f16", "-o", out)
    got, file_type = types(out)
    assert_norms_f32(got)
    assert all(got[n] == Q.F16 for n in MATRICES + [WIDE, "token_embd.weight", "output.weight"])
    assert file_type == F.MOSTLY_F16
    out = str(tmp_path / "bf16.gguf")
    ok(TCONVERT, src, "--dtype", "bf16", "-o", out)
    got, file_type = types(out)
    assert_norms_f32(got)
    assert got["blk.0.attn_q.weight"] == Q.BF16 and file_type == F.MOSTLY_BF16
    out = str(tmp_path / "f32.gguf")
    ok(TCONVERT, src, "--dtype", "f32", "-o", out)
    assert types(out)[1] == F.ALL_F32


def test_f16_norms_are_widened(tmp_path):
    # A file with F16 norms (as tconvert --dtype f16 wrote before) is repaired on the way.
    src, out = str(tmp_path / "in.gguf"), str(tmp_path / "out.gguf")
    llama_gguf(src, norm_dtype=np.float16)
    ok(TCONVERT, src, "-o", out)
    assert_norms_f32(types(out)[0])
    q = str(tmp_path / "q.gguf")
    ok(TQUANT, src, "--scheme", "int8", "-o", q)
    got, file_type = types(q)
    assert_norms_f32(got)
    assert got["blk.0.attn_q.weight"] == Q.Q8_0 and file_type == F.MOSTLY_Q8_0


def test_tquant_scheme_types_and_fallbacks(tmp_path):
    src, f16 = str(tmp_path / "in.gguf"), str(tmp_path / "f16.gguf")
    llama_gguf(src)
    ok(TCONVERT, src, "--dtype", "f16", "-o", f16)
    for scheme, want, fallback, ftype in [("q4k", Q.Q4_K, Q.Q5_0, F.MOSTLY_Q4_K_M), ("q5k", Q.Q5_K, Q.Q5_1, F.MOSTLY_Q5_K_M),
                                          ("q6k", Q.Q6_K, Q.Q8_0, F.MOSTLY_Q6_K), ("q3k", Q.Q3_K, Q.IQ4_NL, F.MOSTLY_Q3_K_M)]:
        out = str(tmp_path / f"{scheme}.gguf")
        r = ok(TQUANT, f16, "--scheme", scheme, "--no-default-keep", "-o", out)
        got, file_type = types(out)
        assert_norms_f32(got)  # --no-default-keep does not quantize them for llama.cpp
        for name in MATRICES + ["token_embd.weight", "output.weight"]:
            assert got[name] == want, (scheme, name, got[name])
        assert got[WIDE] == fallback, (scheme, got[WIDE])
        assert file_type == ftype, (scheme, file_type)
        err = r.stderr.decode()
        assert err.count("fallback") == 1, err


def test_fallback_notice_counts_tensors(tmp_path):
    src = str(tmp_path / "in.gguf")
    rng = np.random.default_rng(1)
    w = GGUFWriter(src, "llama")
    w.add_block_count(3)
    for i in range(3):
        w.add_tensor(f"blk.{i}.ffn_down.weight", rng.standard_normal((64, FFN)).astype(np.float16))
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(64, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    out = str(tmp_path / "q.gguf")
    err = ok(TQUANT, src, "--scheme", "q4k", "-o", out).stderr.decode()
    lines = [line for line in err.splitlines() if "fallback" in line]
    assert len(lines) == 1 and "3 tensors" in lines[0] and "Q5_0" in lines[0], err
    assert all(t == Q.Q5_0 for n, t in types(out)[0].items() if "ffn_down" in n)


def test_budget_output_tells_its_file_type(tmp_path):
    src, f16, out = str(tmp_path / "in.gguf"), str(tmp_path / "f16.gguf"), str(tmp_path / "b.gguf")
    llama_gguf(src)
    ok(TCONVERT, src, "--dtype", "f16", "-o", f16)
    ok(TQUANT, f16, "--budget", "4.5", "-o", out)
    got, file_type = types(out)
    assert_norms_f32(got)
    counts = {}
    for name, t in got.items():
        if name not in NORMS:
            counts[t] = counts.get(t, 0) + 1
    most = max(counts.values())
    allowed = {int(F[f"MOSTLY_{t.name}"]) for t, c in counts.items() if c == most and f"MOSTLY_{t.name}" in F.__members__}
    allowed |= {int(F[f"MOSTLY_{t.name}_M"]) for t, c in counts.items() if c == most and f"MOSTLY_{t.name}_M" in F.__members__}
    assert file_type in allowed, (file_type, counts)


def test_repacked_tquant_file_is_a_llama_model(tmp_path):
    # GGUF (F16 norms) -> tquant safetensors -> tconvert repack to GGUF: the norms come out
    # F32, the typed pairs come back (general.architecture), and the file type is Q8_0.
    src, q, out = str(tmp_path / "in.gguf"), str(tmp_path / "q.safetensors"), str(tmp_path / "q.gguf")
    llama_gguf(src, norm_dtype=np.float16)
    ok(TQUANT, src, "--scheme", "int8", "-o", q)
    r = ok(TCONVERT, q, "-o", out)
    assert b"no model metadata" not in r.stderr
    got, file_type = types(out)
    assert_norms_f32(got)
    assert got["blk.0.attn_q.weight"] == Q.Q8_0 and file_type == F.MOSTLY_Q8_0
    assert GGUFReader(out).fields["general.architecture"].contents() == "llama"
