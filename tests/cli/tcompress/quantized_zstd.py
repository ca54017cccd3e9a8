# quantized_zstd.py make OUT | size FILE LEVEL
#   make: weights quantized at the source to 255 levels (one step per tensor), stored as
#         f16 ("emb", 4096 x 384, rows of differing scale like a token embedding) and f32
#         ("w", 512 x 384, Laplace): values repeat as whole elements, which byte planes
#         break up, so zstd on the raw bytes beats them (seeded).
#   size: bytes of one zstd frame of FILE at LEVEL, through the libzstd the tools link
#         (what `zstd -LEVEL` writes, less its 4-byte checksum), printed.
import ctypes
import ctypes.util
import sys

import numpy as np


def quantized(w, dtype):
    step = np.abs(w).max() / 127
    return (np.clip(np.round(w / step), -127, 127) * step).astype(dtype)


if sys.argv[1] == "make":
    from safetensors.numpy import save_file
    rng = np.random.default_rng(51)
    emb = rng.normal(0, 1, (4096, 384)) * rng.lognormal(-3, 0.5, (4096, 1))
    w = rng.laplace(0, 0.03, (512, 384))
    save_file({"emb": quantized(emb, np.float16), "w": quantized(w, np.float32)}, sys.argv[2])
else:
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    lib.ZSTD_compress.restype = ctypes.c_size_t
    lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    data = open(sys.argv[2], "rb").read()
    cap = lib.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(out, cap, data, len(data), int(sys.argv[3]))
    if n > cap:
        sys.exit("zstd failed")
    print(n)
