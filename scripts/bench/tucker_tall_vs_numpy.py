#!/usr/bin/env python3
"""Tucker and TT of a tall matrix: tdecomp against numpy's thin SVD, same matrix, same run.

  tucker_tall_vs_numpy.py [--tdecomp PATH] [--reps N] [--threads J] [--args ARGS]

The matrix is the 30522 x 384 word embedding of all-minilm-l6-v2 (f32) from the reference
environment's model directory, or, when that is absent, a seeded 30522 x 384 matrix with
a decaying spectrum. Per repetition, interleaved: numpy's np.linalg.svd(full_matrices=False)
in a fresh interpreter (the SVD alone timed), then `tdecomp tucker` (whole command, file
read and written) and `tdecomp tt`. Peak memory is each process's maximum resident size
(/usr/bin/time). Runs once idle and once beside a CPU-bound process (`yes`); prints
medians and ratios.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from busy import loads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, ".venv", "models", "all-minilm-l6-v2", "model.safetensors")

NUMPY_SVD = r"""
import sys, time
import numpy as np
from safetensors.numpy import load_file
a = load_file(sys.argv[1])["emb"].astype(np.float64)
t = time.perf_counter()
np.linalg.svd(a, full_matrices=False)
print(time.perf_counter() - t)
"""


def make_matrix(path):
    import numpy as np
    from safetensors.numpy import load_file, save_file
    if os.path.exists(MODEL):
        emb = load_file(MODEL)["embeddings.word_embeddings.weight"]
        source = "all-minilm-l6-v2 word embedding"
    else:
        rng = np.random.default_rng(51)
        u, _ = np.linalg.qr(rng.normal(size=(30522, 384)))
        v, _ = np.linalg.qr(rng.normal(size=(384, 384)))
        emb = ((u * (np.arange(1, 385) ** -0.7)) @ v.T).astype(np.float32)
        source = "seeded 30522x384, singular values k^-0.7"
    save_file({"emb": emb}, path)
    return source, emb.nbytes


def timed(cmd, env):
    """(wall seconds, peak KiB, stdout) of one command."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"tucker_tall_vs_numpy.py: error: {' '.join(cmd)} failed: {r.stderr.strip()[-400:]}")
    wall, peak = r.stderr.strip().splitlines()[-1].split()
    return float(wall), int(peak), r.stdout


def one_round(a, work, mat, env, extra):
    wall, peak, out = timed([sys.executable, "-c", NUMPY_SVD, mat], env)
    numpy = (float(out.strip()), peak)
    rows = {"numpy svd": numpy}
    for method in ("tucker", "tt"):
        cmd = [a.tdecomp, method, mat, "-j", str(a.threads), "-q", "-f", "-o", os.path.join(work, f"{method}.safetensors")]
        wall, peak, _ = timed(cmd + extra, env)
        rows[f"tdecomp {method}"] = (wall, peak)
    return rows


def series(a, work, mat, env, extra):
    runs = [one_round(a, work, mat, env, extra) for _ in range(a.reps)]
    return {k: (statistics.median(r[k][0] for r in runs), statistics.median(r[k][1] for r in runs)) for k in runs[0]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tdecomp", default=os.path.join(ROOT, "build", "tdecomp"))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--args", default="--tol 1e-2", help="tdecomp arguments (default: --tol 1e-2)")
    a = p.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    with tempfile.TemporaryDirectory() as work:
        mat = os.path.join(work, "emb.safetensors")
        source, nbytes = make_matrix(mat)
        print(f"matrix: {source}, {nbytes / 2**20:.1f} MiB (f32); tdecomp {a.args} -j {a.threads}; "
              f"medians of {a.reps}, interleaved; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        print("| load | run | seconds | x numpy | peak MiB | x tensor |")
        print("|---|---|---|---|---|---|")
        for label in loads():
            med = series(a, work, mat, env, a.args.split())
            base = med["numpy svd"][0]
            for k, (sec, kib) in med.items():
                print(f"| {label} | {k} | {sec:.2f} | {sec / base:.2f} | {kib / 1024:.0f} | {kib * 1024 / nbytes:.2f} |")


if __name__ == "__main__":
    main()
