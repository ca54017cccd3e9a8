#!/usr/bin/env python3
"""Time the Python safetensors package saving the state `tckpt bench` saves (SIZE bytes
of float32 in COUNT tensors) into DIR, with and without an fsync of the file, and
print the medians as JSON. Used by scripts/bench/ckpt.sh for the side-by-side table."""
import json
import os
import statistics
import sys
import time

import numpy as np
from safetensors.numpy import save_file


def main():
    directory, size, count, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    per = size // count // 4
    rng = np.random.default_rng(1)
    state = {f"layer.{i:03d}.weight": rng.integers(0, 2**32, per, dtype=np.uint32).view(np.float32) for i in range(count)}
    path = os.path.join(directory, "peer.safetensors")
    plain, durable = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        save_file(state, path)
        plain.append(time.perf_counter() - t0)
        os.remove(path)
        t0 = time.perf_counter()
        save_file(state, path)
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        durable.append(time.perf_counter() - t0)
        os.remove(path)
    print(json.dumps({"peer": "safetensors.numpy.save_file", "bytes": per * 4 * count,
                      "save_s": statistics.median(plain), "save_fsync_s": statistics.median(durable)}))


if __name__ == "__main__":
    main()
