#!/usr/bin/env python3
"""tquant's IQ2 and IQ3 twins (iq2xxs, iq2xs, iq2s, iq3xxs, iq3s) against llama-quantize's
IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S on the ffn_down weights of a real model
(SmolLM2-135M: 1536 columns, whole 256-blocks), with the same llama.cpp imatrix on both
sides.

llama-quantize runs with `--tensor-type ffn_down=TYPE` over a Q8_0 base, and its time
less that of an all-Q8_0 run is the time of the IQ3 tensors; tquant quantizes the
ffn_down tensors alone (`tconvert -t '*ffn_down*'` first, not timed) with `--importance`
the same imatrix. Both at one thread (`-j 1`, llama-quantize's nthread 1), each run
REPS times interleaved; the median time is reported. For every ffn_down tensor in the
type: the weight SQNR and the imatrix-weighted SQNR (each column's error weighted by its
mean squared activation, in_sum2 / counts: an estimate of the output error, what an
imatrix-guided quantizer aims at), both from gguf-py's dequantize of the written blocks.
Also tquant without the imatrix (llama-quantize refuses IQ2_XXS, IQ2_XS and IQ3_XXS
without one). Prints a
Markdown table.

  .venv/bin/python scripts/bench/iq_grid_vs_llama_quantize.py --bin build \\
      --llama-quantize LLAMA/bin/llama-quantize --model f16.gguf --imatrix imatrix.gguf --work .bench/iq3
"""
import argparse
import os
import subprocess
import time

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

TYPES = [("iq2xxs", "IQ2_XXS"), ("iq2xs", "IQ2_XS"), ("iq2s", "IQ2_S"), ("iq3xxs", "IQ3_XXS"), ("iq3s", "IQ3_S")]


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def scores(path, ggml_type, ref, imatrix):
    """{tensor: (SQNR dB, imatrix-weighted SQNR dB)} over the ffn_down tensors stored in ggml_type."""
    out = {}
    for t in GGUFReader(path).tensors:
        if "ffn_down" not in t.name or t.tensor_type.name != ggml_type:
            continue
        cols = int(t.shape[0])
        x = np.array(ref[t.name].data).astype(np.float64).reshape(-1, cols)
        y = dequantize(np.array(t.data), t.tensor_type).astype(np.float64).reshape(-1, cols)
        w = (imatrix[t.name + ".in_sum2"] / imatrix[t.name + ".counts"][0])[None, :]
        e = (x - y) ** 2
        out[t.name] = (10 * np.log10((x * x).sum() / e.sum()), 10 * np.log10((w * x * x).sum() / (w * e).sum()))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="build", help="folder of tconvert and tquant")
    ap.add_argument("--llama-quantize", required=True)
    ap.add_argument("--model", required=True, help="an F16 GGUF")
    ap.add_argument("--imatrix", required=True, help="llama-imatrix's GGUF output for that model")
    ap.add_argument("--work", default=".bench/iq_grid")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    w = lambda name: os.path.join(a.work, name)
    tq = lambda tool: os.path.join(a.bin, tool)
    subprocess.run([tq("tconvert"), a.model, "-t", "*ffn_down*", "-o", w("ffn_down.gguf"), "-f", "-q"], check=True)
    ref = {t.name: t for t in GGUFReader(a.model).tensors}
    imatrix = {t.name: np.array(t.data, dtype=np.float64) for t in GGUFReader(a.imatrix).tensors}
    lq = [a.llama_quantize, "--imatrix", a.imatrix]
    times = {}
    for _ in range(a.reps):
        times.setdefault("base", []).append(timed(lq + [a.model, w("base.gguf"), "Q8_0", "1"]))
        for scheme, ggml in TYPES:
            times.setdefault(ggml, []).append(
                timed(lq + ["--tensor-type", f"ffn_down={ggml.lower()}", a.model, w(f"llama-{ggml}.gguf"), "Q8_0", "1"]))
            for imat in (True, False):
                tag = scheme + ("-imat" if imat else "")
                cmd = [tq("tquant"), w("ffn_down.gguf"), "--scheme", scheme, "--no-provenance", "-j", "1", "-q", "-f",
                       "-o", w(f"tquant-{tag}.gguf")] + (["--importance", a.imatrix] if imat else [])
                times.setdefault(tag, []).append(timed(cmd))
    med = {k: float(np.median(v)) for k, v in times.items()}
    print("| file | tensors | SQNR dB (mean) | imatrix-weighted SQNR dB (mean / median) | ahead (weighted) | seconds |")
    print("|---|---|---|---|---|---|")
    for scheme, ggml in TYPES:
        rows = [(f"llama-quantize {ggml}, imatrix", w(f"llama-{ggml}.gguf"), med[ggml] - med["base"]),
                (f"tquant {scheme}, imatrix", w(f"tquant-{scheme}-imat.gguf"), med[scheme + "-imat"]),
                (f"tquant {scheme}, no imatrix", w(f"tquant-{scheme}.gguf"), med[scheme])]
        res = [scores(path, ggml, ref, imatrix) for _, path, _ in rows]
        names = sorted(set.intersection(*[set(r) for r in res]))
        llama_w = np.array([res[0][n][1] for n in names])
        for (label, _, secs), r in zip(rows, res):
            plain = np.array([r[n][0] for n in names])
            weighted = np.array([r[n][1] for n in names])
            ahead = "" if r is res[0] else f"{int((weighted > llama_w).sum())} of {len(names)}"
            print(f"| {label} | {len(names)} | {plain.mean():.2f} | {weighted.mean():.2f} / {np.median(weighted):.2f} | "
                  f"{ahead} | {secs:.1f} |")


if __name__ == "__main__":
    main()
