# Checks for the tdecomp cases: check.py WHAT ARGS, printing deterministic lines.
#   names FILE                 tensor names, dtypes and shapes of a safetensors file, sorted
#   tt FILE NAME               the mode sizes of NAME's TT cores and whether their ranks chain
#   meta FILE NAME KEY...      values from the tk metadata's decomp entry of NAME
#   error A B NAME BOUND       "rel_error <= BOUND: True" comparing tensor NAME of A and B
import json
import sys

import numpy as np


def load(path):
    if path.endswith(".h5"):
        import h5py
        with h5py.File(path, "r") as f:
            out = {}
            f.visititems(lambda k, v: out.__setitem__(k, v[()]) if isinstance(v, h5py.Dataset) else None)
            return out, dict(f.attrs)
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata() or {}


def header(path):
    """Names, dtypes and shapes of a safetensors file, from its header alone."""
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    return {k: (v["dtype"], v["shape"]) for k, v in h.items() if k != "__metadata__"}


what = sys.argv[1]
if what == "names":
    for k, (dtype, shape) in sorted(header(sys.argv[2]).items()):
        print(k, dtype, shape)
elif what == "tt":
    h, name = header(sys.argv[2]), sys.argv[3]
    cores = [h[f"{name}.tt.core.{k}"][1] for k in range(sum(k.startswith(name + ".tt.core.") for k in h))]
    print("mode sizes", [c[1] for c in cores])
    chain = cores[0][0] == 1 and cores[-1][2] == 1 and all(a[2] == b[0] for a, b in zip(cores, cores[1:]))
    print("ranks chain:", chain)
elif what == "meta":
    _, meta = load(sys.argv[2])
    tk = meta["tk"]
    entry = json.loads(tk if isinstance(tk, str) else tk.decode())["decomp"][sys.argv[3]]
    for key in sys.argv[4:]:
        print(key, entry[key])
elif what == "error":
    a, _ = load(sys.argv[2])
    b, _ = load(sys.argv[3])
    x, y = a[sys.argv[4]].astype(np.float64), b[sys.argv[4]].astype(np.float64)
    err = np.linalg.norm(x - y) / np.linalg.norm(x)
    print("rel_error <=", sys.argv[5] + ":", bool(err <= float(sys.argv[5])))
