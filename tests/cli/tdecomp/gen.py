# Seeded inputs for the tdecomp cases: gen.py KIND OUT [ARGS]; OUT is safetensors, .npy,
# or .tns (FROSTT text, 1-based indices, every entry listed) for the same values.
#   cp OUT         rank-3 CP tensor 10x9x8 (f32) with N(0,1) factors, tensor "x"
#   tucker OUT     12x11x10 Tucker [3,3,3] + 1e-4 noise (f64), tensor "x"
#   hilbert OUT    1/(1+i+j+k+l) on 8^4 (f64), tensor "h"
#   rescal OUT     nonnegative RESCAL rank 3, 20x20x4, tensor "rel"
#   plain OUT      rank-3 CP 14x13x12 with U(0,1) factors (f64), tensor "x"
#   model OUT      a model-like file (f32): "a.bias" [16], "a.weight" [16, 12] of rank 2,
#                  "b.bias" [12], "conv" [6, 5, 4] of multilinear rank 2, "mask" (bool),
#                  "step" (int64 [1])
#   full OUT       "w" [8, 6], full rank, and "x" [10, 9, 8] of multilinear rank 2 (f32)
#   sparse OUT     rank 3 on 40x30x20 from sparse nonnegative factors (about 6% nonzero)
#                  with 1% noise on the nonzeros (f64), tensor "x"; as .tns only the
#                  nonzeros are listed
#   tall OUT       tall modes (f64): "a" 3000 x 40 with singular values k^-2, and "b"
#                  1500x4x5, "c" 4x1500x5, "d" 4x5x1500 of multilinear rank 3 + 1e-4 noise
import sys

import numpy as np

kind, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)


def cp(shape, rank, lo=None):
    fs = [rng.uniform(0, 1, (n, rank)) if lo is not None else rng.normal(size=(n, rank)) for n in shape]
    return np.einsum("ir,jr,kr->ijk", *fs)


if kind == "cp":
    t = {"x": cp((10, 9, 8), 3).astype(np.float32)}
elif kind == "tucker":
    core = rng.normal(size=(3, 3, 3))
    us = [np.linalg.qr(rng.normal(size=(n, 3)))[0] for n in (12, 11, 10)]
    x = np.einsum("abc,ia,jb,kc->ijk", core, *us)
    t = {"x": x + 1e-4 * np.linalg.norm(x) * rng.normal(size=x.shape) / np.sqrt(x.size)}
elif kind == "hilbert":
    i = np.arange(8)
    t = {"h": 1.0 / (1 + i[:, None, None, None] + i[None, :, None, None] + i[None, None, :, None] + i[None, None, None, :])}
elif kind == "rescal":
    a = rng.uniform(0, 0.1, (20, 3))
    a[np.arange(20), np.arange(20) % 3] += 1
    r = rng.uniform(0, 1, (4, 3, 3))
    t = {"rel": np.einsum("ia,kab,jb->ijk", a, r, a)}
elif kind == "plain":
    t = {"x": cp((14, 13, 12), 3, lo=0)}
elif kind == "sparse":
    fs = [rng.uniform(0.2, 1.2, (n, 3)) * (rng.uniform(0, 1, (n, 3)) < 0.3) for n in (40, 30, 20)]
    x = np.einsum("ir,jr,kr->ijk", *fs)
    t = {"x": x * (1 + 0.01 * rng.normal(size=x.shape))}
elif kind in ("model", "full"):
    def tucker2(shape):
        us = [rng.normal(size=(n, 2)) for n in shape]
        return np.einsum("abc,ia,jb,kc->ijk", rng.normal(size=(2, 2, 2)), *us).astype(np.float32)
    if kind == "model":
        t = {"a.bias": rng.normal(size=16).astype(np.float32),
             "a.weight": (rng.normal(size=(16, 2)) @ rng.normal(size=(2, 12))).astype(np.float32),
             "b.bias": rng.normal(size=12).astype(np.float32),
             "conv": tucker2((6, 5, 4)),
             "mask": np.ones((4, 4), np.bool_),
             "step": np.array([7], np.int64)}
    else:
        t = {"w": rng.normal(size=(8, 6)).astype(np.float32), "x": tucker2((10, 9, 8))}
elif kind == "tall":
    def orth(n, r):
        return np.linalg.qr(rng.normal(size=(n, r)))[0]
    t = {"a": (orth(3000, 40) * np.arange(1, 41) ** -2.0) @ orth(40, 40).T}
    for name, shape in (("b", (1500, 4, 5)), ("c", (4, 1500, 5)), ("d", (4, 5, 1500))):
        x = np.einsum("abc,ia,jb,kc->ijk", rng.normal(size=(3, 3, 3)), *(orth(n, 3) for n in shape))
        t[name] = x + 1e-4 * np.linalg.norm(x) * rng.normal(size=shape) / np.sqrt(x.size)
else:
    raise SystemExit("unknown kind " + kind)

if out.endswith(".npy"):
    np.save(out, next(iter(t.values())))
elif out.endswith(".tns"):
    with open(out, "w") as f:
        f.write("# FROSTT test\n")
        for idx, v in np.ndenumerate(next(iter(t.values()))):
            if kind == "sparse" and v == 0:
                continue
            f.write(" ".join(str(i + 1) for i in idx) + f" {float(v)!r}\n")
else:
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(v) for k, v in t.items()}, out)
