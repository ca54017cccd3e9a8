"""llama.cpp's importance matrices as tquant --importance.

llama-imatrix writes a GGUF file (NAME.in_sum2 and NAME.counts per weight matrix) or the
legacy .dat (per entry: name, ncall, values that are means times ncall). tquant must
take either as the per-column importance in_sum2 / counts (values / ncall), under
llama.cpp's tensor names or, for a llama model in Hugging Face's names, under the
mapped ones: the output equals the one made with those vectors given as a safetensors
importance file under the input's names. A file that weighs no tensor is an error.
"""
import os
import struct

import numpy as np
from gguf import GGUFWriter
from safetensors.numpy import save_file

from tk_helpers import BIN, run, ok

TQUANT = os.path.join(BIN, "tquant")
COLS = 256
HF = {"blk.0.attn_q.weight": "model.layers.0.self_attn.q_proj.weight",
      "blk.0.ffn_down.weight": "model.layers.0.mlp.down_proj.weight"}


def importance():
    rng = np.random.default_rng(7)
    return {name: (rng.random(COLS) * 10 + 0.01).astype(np.float32) for name in HF}


def write_dat(path, imp, ncall=12):
    b = struct.pack("<i", len(imp))
    for name, v in imp.items():
        raw = name.encode()
        b += struct.pack("<i", len(raw)) + raw + struct.pack("<ii", ncall, len(v))
        b += (v.astype(np.float32) * np.float32(ncall)).astype("<f4").tobytes()
    b += struct.pack("<i", 3) + struct.pack("<i", 9) + b"calib.txt"
    with open(path, "wb") as f:
        f.write(b)


def write_gguf_imatrix(path, imp, count=2048.0):
    w = GGUFWriter(path, None)
    w.add_string("general.type", "imatrix")
    w.add_uint32("imatrix.chunk_count", 4)
    for name, v in imp.items():
        w.add_tensor(name + ".in_sum2", (v * np.float32(count)).reshape(1, COLS).astype(np.float32))
        w.add_tensor(name + ".counts", np.full((1, 1), count, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def model(path):
    rng = np.random.default_rng(2)
    # Heavy-tailed weights, so that the importance changes the chosen scales.
    save_file({hf: (rng.standard_t(3, (64, COLS))).astype(np.float32) for hf in HF.values()}, path)


def quantize(tmp_path, src, imp_path, tag):
    out = str(tmp_path / f"q-{tag}.safetensors")
    r = ok(TQUANT, src, "--scheme", "q4k", "--importance", imp_path, "--no-provenance", "-o", out)
    assert b"match no tensor" not in r.stderr, r.stderr
    with open(out, "rb") as f:
        return f.read()


def test_imatrix_files_weigh_hf_tensors(tmp_path):
    src = str(tmp_path / "model.safetensors")
    model(src)
    imp = importance()
    # Rounding as the files do: the vectors tquant must arrive at.
    dat_values = {n: (v * np.float32(12)).astype(np.float32) / np.float32(12) for n, v in imp.items()}
    gguf_values = {n: (v * np.float32(2048)).astype(np.float32) / np.float32(2048) for n, v in imp.items()}
    ref_dat, ref_gguf = str(tmp_path / "ref-dat.safetensors"), str(tmp_path / "ref-gguf.safetensors")
    save_file({HF[n]: v for n, v in dat_values.items()}, ref_dat)
    save_file({HF[n]: v for n, v in gguf_values.items()}, ref_gguf)
    dat, gg = str(tmp_path / "imatrix.dat"), str(tmp_path / "imatrix.gguf")
    write_dat(dat, imp)
    write_gguf_imatrix(gg, imp)
    plain = str(tmp_path / "plain.safetensors")
    ok(TQUANT, src, "--scheme", "q4k", "--no-provenance", "-o", plain)
    with open(plain, "rb") as f:
        without = f.read()
    from_dat = quantize(tmp_path, src, dat, "dat")
    assert from_dat == quantize(tmp_path, src, ref_dat, "ref-dat")
    assert from_dat != without  # the importance was used
    assert quantize(tmp_path, src, gg, "gguf") == quantize(tmp_path, src, ref_gguf, "ref-gguf")


def test_hf_named_importance_weighs_gguf_tensors(tmp_path):
    src = str(tmp_path / "model.gguf")
    rng = np.random.default_rng(4)
    w = GGUFWriter(src, "llama")
    for name in HF:
        w.add_tensor(name, rng.standard_t(3, (64, COLS)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    imp = str(tmp_path / "imp.safetensors")
    save_file({hf: v for hf, v in zip(HF.values(), importance().values())}, imp)
    r = ok(TQUANT, src, "--scheme", "q4k", "--importance", imp, "-o", str(tmp_path / "q.gguf"))
    assert b"match no tensor" not in r.stderr, r.stderr


def test_importance_that_weighs_nothing_is_an_error(tmp_path):
    src = str(tmp_path / "model.safetensors")
    model(src)
    dat = str(tmp_path / "other.dat")
    write_dat(dat, {"blk.7.attn_q.weight": np.ones(COLS, np.float32), "x.weight": np.ones(COLS, np.float32)})
    out = str(tmp_path / "q.safetensors")
    r = run(TQUANT, src, "--scheme", "q4k", "--importance", dat, "-o", out)
    assert r.returncode == 3, r.stderr
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tquant: error: ") and "2 entries" in lines[0], lines
    assert not os.path.exists(out)
    # The same from a safetensors importance file (before: a warning and exit 0).
    st = str(tmp_path / "other.safetensors")
    save_file({"nothing.weight": np.ones(COLS, np.float32)}, st)
    r = run(TQUANT, src, "--scheme", "q4k", "--importance", st, "-o", out)
    assert r.returncode == 3 and len(r.stderr.splitlines()) == 1, r.stderr
    assert not os.path.exists(out)


def test_truncated_dat_is_invalid_input(tmp_path):
    src = str(tmp_path / "model.safetensors")
    model(src)
    dat = str(tmp_path / "cut.dat")
    write_dat(dat, importance())
    with open(dat, "r+b") as f:
        f.truncate(100)
    r = run(TQUANT, src, "--scheme", "q4k", "--importance", dat, "-o", str(tmp_path / "q.safetensors"))
    assert r.returncode == 3 and len(r.stderr.splitlines()) == 1, r.stderr
