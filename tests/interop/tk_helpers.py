"""What the interop tests share: the tools' paths, running them, and seeded arrays."""
import math
import os
import subprocess

import numpy as np

BIN = os.environ.get("TK_BIN", "build")
TINFO = os.path.join(BIN, "tinfo")
TCONVERT = os.path.join(BIN, "tconvert")


def run(*args, stdin=None):
    """Run a tool; `stdin` is the bytes it reads through a pipe, or an open file it reads directly."""
    if isinstance(stdin, (bytes, bytearray)):
        return subprocess.run(list(args), input=stdin, capture_output=True)
    return subprocess.run(list(args), stdin=stdin, capture_output=True)


def ok(*args, stdin=None):
    r = run(*args, stdin=stdin)
    assert r.returncode == 0, r.stderr.decode()
    return r


def sample(dtype, shape, seed=0):
    """An array of `dtype` with random bit patterns (NaN payloads and subnormals for floats)."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes()
    return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
