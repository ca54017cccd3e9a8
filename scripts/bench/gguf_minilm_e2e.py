#!/usr/bin/env python3
"""End to end on a real model: tquant's GGUF against llama-quantize's, run by llama.cpp.

all-MiniLM-L6-v2 (a 6-layer BERT, .venv/models/all-minilm-l6-v2 from `make deps`) is
converted to an f16 GGUF by llama.cpp's own converter, quantized by llama-quantize
(Q4_K_M, and IQ4_NL against tquant's iq4nl twin) and by tquant (`--budget 4.5`, the issue's command; `--budget` at Q4_K_M's bits
per weight on the block matrices; then with --quantize-embeddings, as llama-quantize
quantizes token_embd: `--budget` at Q4_K_M's bits per weight on the blocks and
token_embd, `--size` at Q4_K_M's file size and at 90% of it), and every file is run by
llama.cpp's llama-embedding (mean pooling, L2-normalised) on SENTENCES. For each file:
the size in bytes, the bits per weight over the 36 matrices of the blocks and over those
and token_embd (the 37 tensors llama-quantize quantizes; from the stored bytes of each
tensor, read by the vendored gguf-py), the types used, the wall time of the quantizer,
and the cosine similarity of each sentence's embedding to the f16 file's (mean and min).
The f16 file is checked against a reference computed here with torch (transformers'
BertModel on model.safetensors, mean pooling), unless --no-reference.

llama.cpp is the tree vendored in the llama-cpp-python 0.3.36 source package (PyPI), as
for scripts/bench/quant_vs_ggml.sh: downloaded into WORK, configured for the CPU (AVX2,
no OpenMP, no curl or OpenSSL, static) and only llama-quantize and llama-embedding built
(nice -n 19, -j JOBS), once: a later run reuses WORK/llama-build. The model directory is
copied into WORK with what the converter needs beside it: a tokenizer_config.json derived
from tokenizer.json, and the sentence-transformers pooling files (mean pooling, as the
model is published); .venv/models is never written. The f16 GGUF is converted again only
when those inputs change; the quantized files are made anew on every run.

Needs: cmake and a C++ compiler; .venv (`make deps`: scripts/requirements-test.txt
holds torch and transformers, which the converter imports); tquant
built. Prints a Markdown table, writes WORK/results.json; exits 1 when llama-embedding
fails on a file (the table says which and why).

  .venv/bin/python scripts/bench/gguf_minilm_e2e.py --tquant build/tquant --work .bench/e2e
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, ".venv")
if os.path.realpath(sys.prefix) != os.path.realpath(VENV) and os.path.exists(os.path.join(VENV, "bin", "python")):
    os.execv(os.path.join(VENV, "bin", "python"), [os.path.join(VENV, "bin", "python")] + sys.argv)

import numpy as np  # noqa: E402

from minilm_sentences import SENTENCES  # noqa: E402

PACKAGE = "llama-cpp-python==0.3.36"
SDIST = "llama_cpp_python-0.3.36"
TARGETS = ("llama-quantize", "llama-embedding")
# AVX2, as tensorkit's own vector path: not -march=native, whose AMX kernels (taken for
# Q4_0, Q4_1 and Q8_0 tensors) die with SIGILL where the kernel grants no AMX state, as
# in many virtual machines.
GGML_CPU = ("-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
            "-DGGML_BMI2=ON")



def die(msg):
    sys.exit(f"gguf_minilm_e2e.py: error: {msg}")


def run(cmd, log=None, env=None, nice=False):
    """Runs cmd (stdout and stderr to the file log, or captured); wall seconds."""
    cmd = (["nice", "-n", "19"] if nice else []) + [str(c) for c in cmd]
    t0 = time.perf_counter()
    if log:
        with open(log, "w") as f:
            r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    else:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        tail = open(log).read()[-3000:] if log else (r.stdout + r.stderr)[-3000:]
        die(f"{' '.join(cmd)} exited {r.returncode}:\n{tail}")
    return time.perf_counter() - t0


def build_llama(work, jobs, targets=TARGETS):
    """llama.cpp from the llama-cpp-python sdist: WORK/llama-build/bin/TARGET for each of
    targets. Returns the source tree and the build record (seconds per step)."""
    src = os.path.join(work, SDIST, "vendor", "llama.cpp")
    build = os.path.join(work, "llama-build")
    record = os.path.join(work, "llama-build.json")
    if all(os.path.exists(os.path.join(build, "bin", t)) for t in targets) and os.path.exists(record):
        return src, dict(json.load(open(record)), reused=True)
    times = {}
    if not os.path.isdir(src):
        tgz = os.path.join(work, SDIST + ".tar.gz")
        if not os.path.exists(tgz):
            times["download_s"] = run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                                       "--no-deps", "--no-binary", ":all:", PACKAGE, "-d", work])
        run(["tar", "xzf", tgz, "-C", work])
    # The package leaves out ggml's pkg-config template, which ggml's CMakeLists configures.
    pc = os.path.join(src, "ggml", "ggml.pc.in")
    if not os.path.exists(pc):
        open(pc, "w").close()
    times["configure_s"] = run([
        "cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", *GGML_CPU, "-DGGML_OPENMP=OFF",
        "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_EXAMPLES=ON", "-DLLAMA_BUILD_TOOLS=ON",
        "-DGGML_BUILD_TESTS=OFF", "-DGGML_BUILD_EXAMPLES=OFF"], log=os.path.join(work, "cmake.log"), nice=True)
    times["build_s"] = run(["cmake", "--build", build, "-j", jobs, "--target", *targets],
                           log=os.path.join(work, "make.log"), nice=True)
    times["jobs"] = jobs
    json.dump(times, open(record, "w"), indent=1)
    return src, dict(times, reused=False)


def write_json(path, value):
    """Writes value unless the file holds it already (its time then says when it changed)."""
    text = json.dumps(value, indent=1)
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)


def prepare_model(model, work):
    """A copy of the model directory with what the converter reads beside the weights:
    - tokenizer_config.json, derived from tokenizer.json: without it gguf-py's SpecialVocab
      marks BOS and EOS as added (the [CLS] ... [SEP] template) but records no id for
      them, and llama-embedding then looks up the text of token -1 (std::out_of_range);
    - modules.json and 1_Pooling/config.json of sentence-transformers (mean pooling, then
      normalisation, as all-MiniLM-L6-v2 is published), for the GGUF's pooling type."""
    dest = os.path.join(work, "model")
    os.makedirs(os.path.join(dest, "1_Pooling"), exist_ok=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        if not os.path.exists(os.path.join(model, name)):
            die(f"{model} has no {name} (`make deps` fetches the model)")
        if not os.path.exists(os.path.join(dest, name)):
            shutil.copyfile(os.path.join(model, name), os.path.join(dest, name))
    config = json.load(open(os.path.join(model, "config.json")))
    tok = json.load(open(os.path.join(model, "tokenizer.json")))
    single = tok["post_processor"]["single"]
    added = {t["id"]: t["content"] for t in tok["added_tokens"]}
    norm = tok.get("normalizer") or {}
    write_json(os.path.join(dest, "tokenizer_config.json"), {
        "tokenizer_class": "BertTokenizer", "do_lower_case": bool(norm.get("lowercase", True)),
        "tokenize_chinese_chars": bool(norm.get("handle_chinese_chars", True)), "strip_accents": norm.get("strip_accents"),
        "cls_token": single[0]["SpecialToken"]["id"], "sep_token": single[-1]["SpecialToken"]["id"],
        "unk_token": tok["model"]["unk_token"], "pad_token": added[config.get("pad_token_id", 0)],
        "mask_token": next(c for c in added.values() if "MASK" in c.upper()),
        "model_max_length": config["max_position_embeddings"]})
    write_json(os.path.join(dest, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])
    write_json(os.path.join(dest, "1_Pooling", "config.json"), {
        "word_embedding_dimension": config["hidden_size"], "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False})
    return dest


def convert(src, model_dir, out, work):
    inputs = [os.path.join(model_dir, n) for n in ("config.json", "tokenizer.json", "model.safetensors",
                                                    "tokenizer_config.json", "modules.json")]
    if os.path.exists(out) and os.path.getmtime(out) >= max(map(os.path.getmtime, inputs)):
        return None
    env = dict(os.environ, PYTHONPATH=os.path.join(src, "gguf-py"), HF_HUB_OFFLINE="1")
    part = out + ".part"
    seconds = run([sys.executable, os.path.join(src, "convert_hf_to_gguf.py"), model_dir, "--outtype", "f16",
                   "--outfile", part], log=os.path.join(work, "convert.log"), env=env)
    os.replace(part, out)
    return seconds


def tensor_stats(gguf, path, f16_types):
    """Size, bits per weight over the block matrices and over those and token_embd, and
    the count of tensors of each type among the tensors the f16 file holds in F16."""
    r = gguf.GGUFReader(path)
    blocks = [t for t in r.tensors if t.name.startswith("blk.") and len(t.shape) == 2]
    matrices = blocks + [t for t in r.tensors if t.name == "token_embd.weight"]
    bpw = lambda ts: sum(int(t.n_bytes) * 8 for t in ts) / sum(int(t.n_elements) for t in ts)
    types = {}
    for t in r.tensors:
        if f16_types is None or t.name in f16_types:
            types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    embd = {t.name: t.tensor_type.name for t in r.tensors if t.name in ("token_embd.weight", "position_embd.weight")}
    return {"bytes": os.path.getsize(path), "bpw_blocks": bpw(blocks), "bpw_matrices": bpw(matrices),
            "n_blocks": len(blocks), "weights_blocks": sum(int(t.n_elements) for t in blocks),
            "weights_matrices": sum(int(t.n_elements) for t in matrices), "types": types, "embd_types": embd}


def embed(llama_embedding, path, threads, log):
    """llama-embedding's sentence embeddings (n, dim), or the error it printed."""
    cmd = [llama_embedding, "-m", path, "-p", "\n".join(SENTENCES), "--pooling", "mean", "--embd-normalize", "2",
           "--embd-output-format", "json", "-t", str(threads), "-c", "512", "--no-warmup"]
    t0 = time.perf_counter()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    with open(log, "w") as f:
        f.write(r.stderr)
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if any(k in l.lower() for k in ("error", "failed", "invalid", "wrong"))]
        return None, seconds, (lines or r.stderr.splitlines()[-5:] or [f"exit {r.returncode}"])
    try:
        doc, _ = json.JSONDecoder().raw_decode(r.stdout[r.stdout.index("{"):])
    except ValueError as e:  # seen once, not reproduced: say so in the table rather than stop
        with open(log + ".stdout", "w") as f:
            f.write(r.stdout)
        return None, seconds, [f"output is not JSON ({e}); kept in {os.path.basename(log)}.stdout"]
    e = np.array([d["embedding"] for d in sorted(doc["data"], key=lambda d: d["index"])], dtype=np.float64)
    if e.shape[0] != len(SENTENCES):
        return None, seconds, [f"{e.shape[0]} embeddings for {len(SENTENCES)} sentences"]
    return e, seconds, None


def reference(model_dir):
    """Mean-pooled, normalised last hidden states of transformers' BertModel (torch, f32)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    with torch.no_grad():
        enc = tok(SENTENCES, padding=True, return_tensors="pt")
        h = model(**enc).last_hidden_state
        m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
        e = (h * m).sum(1) / m.sum(1)
    e = e.double().numpy()
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def cosines(a, b):
    c = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"mean": float(c.mean()), "min": float(c.min()), "argmin": int(c.argmin()), "each": c.tolist()}


def short_types(types):
    return ", ".join(f"{n} {k}" for k, n in sorted(types.items(), key=lambda kv: -kv[1]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tquant", required=True, help="the tquant binary (build/tquant)")
    p.add_argument("--work", default=os.path.join(ROOT, ".bench", "e2e"), help="work directory (default .bench/e2e)")
    p.add_argument("--model", default=os.path.join(VENV, "models", "all-minilm-l6-v2"))
    p.add_argument("--jobs", default="2", help="parallel compile jobs for llama.cpp (default 2)")
    p.add_argument("--threads", type=int, default=2, help="threads of the quantizers and llama-embedding")
    p.add_argument("--smaller", type=float, default=0.9, help="the smaller size, a fraction of Q4_K_M's file")
    p.add_argument("--no-reference", action="store_true", help="skip the torch reference of the f16 file")
    p.add_argument("--json", action="store_true", help="print results.json instead of the table")
    args = p.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    tquant = os.path.abspath(args.tquant)
    if not os.access(tquant, os.X_OK):
        die(f"{args.tquant} is not an executable (build tensorkit first)")

    src, build = build_llama(work, args.jobs)
    bin_dir = os.path.join(work, "llama-build", "bin")
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    import gguf  # the vendored gguf-py, which knows every type this llama.cpp writes

    model_dir = prepare_model(args.model, work)
    f16 = os.path.join(work, "minilm-f16.gguf")
    convert_s = convert(src, model_dir, f16, work)
    f16_types = {t.name for t in gguf.GGUFReader(f16).tensors if t.tensor_type == gguf.GGMLQuantizationType.F16}

    rows = [{"name": "f16 (convert_hf_to_gguf.py)", "file": f16, "tool": "convert", "seconds": convert_s}]
    rows[0].update(tensor_stats(gguf, f16, f16_types))

    def shown(c):
        """An argument as the results show it: paths relative to WORK or the repository."""
        c = str(c)
        for base in (work, ROOT):
            if c.startswith(base + os.sep):
                return os.path.relpath(c, base)
        return c

    def quantize(name, file, cmd, tool, log):
        path = os.path.join(work, file)
        if os.path.exists(path):
            os.remove(path)
        seconds = run(cmd, log=os.path.join(work, log))
        rows.append({"name": name, "file": path, "tool": tool, "seconds": seconds, "cmd": " ".join(map(shown, cmd))})
        rows[-1].update(tensor_stats(gguf, path, f16_types))
        return rows[-1]

    q4km = quantize("llama-quantize Q4_K_M", "q4km.gguf",
                    [os.path.join(bin_dir, "llama-quantize"), f16, os.path.join(work, "q4km.gguf"), "Q4_K_M",
                     str(args.threads)], "llama", "quantize-q4km.log")

    # One type throughout, side by side: llama.cpp's IQ4_NL against tquant's iq4nl twin
    # (embeddings quantized too, as llama-quantize does).
    quantize("llama-quantize IQ4_NL", "iq4nl.gguf",
             [os.path.join(bin_dir, "llama-quantize"), f16, os.path.join(work, "iq4nl.gguf"), "IQ4_NL",
              str(args.threads)], "llama", "quantize-iq4nl.log")

    def tq(name, file, flags):
        out = os.path.join(work, file)
        return quantize(name, file, [tquant, f16, *flags, "-j", str(args.threads), "-f", "-o", out,
                                     "--json", out[:-5] + ".json"], "tquant", file[:-5] + ".log")

    tq("tquant --budget 4.5", "tq-b4.5.gguf", ["--budget", "4.5"])
    tq(f"tquant --budget {q4km['bpw_blocks']:.4f}", "tq-bq4km.gguf", ["--budget", f"{q4km['bpw_blocks']:.6f}"])
    tq(f"tquant --budget {q4km['bpw_matrices']:.4f} --quantize-embeddings", "tq-bq4km-e.gguf",
       ["--budget", f"{q4km['bpw_matrices']:.6f}", "--quantize-embeddings"])
    tq(f"tquant --size {q4km['bytes']} --quantize-embeddings", "tq-sq4km-e.gguf",
       ["--size", str(q4km["bytes"]), "--quantize-embeddings"])
    # As llama-quantize IQ4_NL stores the rest: token_embd Q8_0, position_embd as it was.
    tq("tquant --scheme iq4nl, token_embd int8", "tq-iq4nl.gguf",
       ["--scheme", "iq4nl", "--quantize-embeddings", "--rule", "token_embd.weight=int8", "--keep", "position_embd.*"])
    smaller = int(q4km["bytes"] * args.smaller)
    tq(f"tquant --size {smaller} --quantize-embeddings", "tq-small-e.gguf", ["--size", str(smaller), "--quantize-embeddings"])

    # Every file through llama.cpp.
    llama_embedding = os.path.join(bin_dir, "llama-embedding")
    ok = True
    for r in rows:
        e, r["embed_s"], r["error"] = embed(llama_embedding, r["file"], args.threads,
                                            os.path.join(work, os.path.basename(r["file"])[:-5] + ".embedding.log"))
        r["embeddings"] = e
        if r["error"]:
            ok = False
    base = rows[0]["embeddings"]
    if base is None:
        die("llama-embedding fails on the f16 file:\n" + "\n".join(rows[0]["error"]))
    for r in rows[1:]:
        if r["embeddings"] is not None:
            r["cosine"] = cosines(r["embeddings"], base)
    if not args.no_reference:
        rows[0]["cosine_to_torch"] = cosines(base, reference(model_dir))

    # The target: llama.cpp runs each tquant file, and at equal or smaller size one
    # of them is at least as close to f16 (mean cosine) as Q4_K_M.
    tq_rows = [r for r in rows if r["tool"] == "tquant"]
    fits = [r for r in tq_rows if r["bytes"] <= q4km["bytes"] and "cosine" in r]
    target = {"all_tquant_files_run": all(r["error"] is None for r in tq_rows),
              "q4km_mean_cosine": q4km.get("cosine", {}).get("mean"),
              "best_tquant_at_most_q4km_size": max(fits, key=lambda r: r["cosine"]["mean"])["name"] if fits else None}
    target["met"] = bool(target["all_tquant_files_run"] and fits and q4km.get("cosine") and
                         max(r["cosine"]["mean"] for r in fits) >= q4km["cosine"]["mean"])

    version = subprocess.run([tquant, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    result = {"model": os.path.basename(os.path.normpath(args.model)), "llama_cpp": PACKAGE + " (vendored llama.cpp)",
              "tquant": version[0] if version else "",
              "llama_build": build, "threads": args.threads, "sentences": SENTENCES, "target": target,
              "rows": [{k: (os.path.basename(v) if k == "file" else v) for k, v in r.items() if k != "embeddings"}
                       for r in rows]}
    json.dump(result, open(os.path.join(work, "results.json"), "w"), indent=1)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0 if ok else 1

    b = build
    print(f"llama.cpp ({PACKAGE} sdist): " + ("reused " if b["reused"] else "") +
          f"build {b.get('build_s', 0):.0f} s at -j{b.get('jobs')}, configure {b.get('configure_s', 0):.1f} s" +
          (f", download {b['download_s']:.0f} s" if "download_s" in b else ""))
    if "cosine_to_torch" in rows[0]:
        c = rows[0]["cosine_to_torch"]
        print(f"f16 GGUF in llama.cpp against torch (transformers BertModel, f32): cosine mean {c['mean']:.6f}, "
              f"min {c['min']:.6f}")
    print(f"{len(SENTENCES)} sentences; bpw from the stored bytes of the {q4km['n_blocks']} block matrices "
          f"({q4km['weights_blocks']} weights) and of those and token_embd ({q4km['weights_matrices']} weights)\n")
    print("| file | bytes | bpw blocks | bpw blocks + token_embd | types (tensors stored F16 in the f16 file) "
          "| token_embd / position_embd | quantize s | cosine to f16 mean / min |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cos = ("llama-embedding failed: " + " / ".join(r["error"])[:300]) if r["error"] else (
            f"{r['cosine']['mean']:.5f} / {r['cosine']['min']:.5f}" if "cosine" in r else "(reference)")
        secs = f"{r['seconds']:.1f}" if r.get("seconds") is not None else ""
        embd = " / ".join(r["embd_types"].get(k, "-") for k in ("token_embd.weight", "position_embd.weight"))
        print(f"| {r['name']} | {r['bytes']} | {r['bpw_blocks']:.4f} | {r['bpw_matrices']:.4f} | "
              f"{short_types(r['types'])} | {embd} | {secs} | {cos} |")
    print(f"\ntarget (llama.cpp runs every tquant file; at <= Q4_K_M's size, mean cosine >= Q4_K_M's): "
          f"{'met' if target['met'] else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
