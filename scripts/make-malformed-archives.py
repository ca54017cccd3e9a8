#!/usr/bin/env python3
"""Write the malformed zip corpus: PyTorch checkpoints (torch.save's zip layout with a
hand-written pickle) and .npz archives, one small file per rule of the readers.

    scripts/make-malformed-archives.py [OUTDIR]      (default: testdata/malformed)

Every file must be rejected by tensorkit with exit code 3 and one line
(tests/cli/tinfo/malformed_archives.sh). Only the standard library and numpy are used;
the pickles are written opcode by opcode, so nothing here needs torch, and none of them
is ever unpickled by Python.
"""
import io
import os
import struct
import sys
import zipfile

import numpy as np


def ustr(s):
    b = s.encode() if isinstance(s, str) else s
    return b"X" + struct.pack("<I", len(b)) + b


def binint(v):
    return b"J" + struct.pack("<i", v)


def tup(values):
    return b"(" + b"".join(binint(v) for v in values) + b"t"


def global_(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def tensor(key, numel, size, stride, offset=0, storage="FloatStorage"):
    """The pickle of torch._utils._rebuild_tensor_v2 over storage `key`."""
    pid = b"(" + ustr("storage") + global_("torch", storage) + ustr(key) + ustr("cpu") + binint(numel) + b"t"
    return (global_("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + b"Q" + binint(offset) + tup(size) +
            tup(stride) + b"\x89" + global_("collections", "OrderedDict") + b")R" + b"tR")


def checkpoint(pickle_body, storages=None):
    """A torch.save-like zip: archive/data.pkl (protocol 2) and archive/data/KEY."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02" + pickle_body + b".")
        z.writestr("archive/byteorder", b"little")
        for key, data in (storages or {}).items():
            z.writestr(f"archive/data/{key}", data)
    return buf.getvalue()


def one_tensor_dict(t):
    return b"}" + ustr("w") + t + b"s"


FLOATS4 = struct.pack("<4f", 1, 2, 3, 4)


def npz(arrays, compressed=False):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def patch(data, offset, new):
    return data[:offset] + new + data[offset + len(new):]


def central(data):
    """Offset of the first central directory header."""
    return data.index(b"PK\x01\x02")


def cases():
    yield "pt-os-system.pt", checkpoint(global_("os", "system") + b"(" + ustr("touch pwned") + b"tR")
    yield "pt-builtins-eval.pt", checkpoint(ustr("builtins") + ustr("eval") + b"\x93" + b"(" + ustr("1") + b"tR")
    yield "pt-module-class.pt", checkpoint(global_("__main__", "Net") + b")\x81")
    yield "pt-storage-missing.pt", checkpoint(one_tensor_dict(tensor("0", 4, [4], [1])))
    yield "pt-view-past-storage.pt", checkpoint(one_tensor_dict(tensor("0", 4, [10], [1])), {"0": FLOATS4})
    yield "pt-offset-past-storage.pt", checkpoint(one_tensor_dict(tensor("0", 4, [2], [1], offset=3)),
                                                 {"0": FLOATS4})
    yield "pt-storage-short.pt", checkpoint(one_tensor_dict(tensor("0", 8, [8], [1])), {"0": FLOATS4})
    yield "pt-negative-size.pt", checkpoint(one_tensor_dict(tensor("0", 4, [-1], [1])), {"0": FLOATS4})
    yield "pt-truncated-pickle.pt", checkpoint(one_tensor_dict(tensor("0", 4, [4], [1]))[:-9], {"0": FLOATS4})
    yield "pt-bad-opcode.pt", checkpoint(b"i" + b"os\nsystem\n", {})
    yield "pt-memo-unset.pt", checkpoint(b"h\x07")
    yield "pt-empty-stack.pt", checkpoint(b"s")
    # A list that holds itself, next to a tensor.
    yield "pt-self-cycle.pt", checkpoint(b"]q\x00" + tensor("0", 4, [4], [1]) + b"ah\x00a", {"0": FLOATS4})
    # 100 nested lists around a tensor.
    yield "pt-deep-nesting.pt", checkpoint(b"]" * 100 + tensor("0", 4, [4], [1]) + b"a" * 100, {"0": FLOATS4})
    # L0 = [t]; L(k+1) = [Lk, Lk]: 2^40 paths to one tensor from 40 lists.
    bomb = b"]" + tensor("0", 4, [4], [1]) + b"aq\x000"
    for k in range(40):
        bomb += b"](h" + bytes([k]) + b"h" + bytes([k]) + b"eq" + bytes([k + 1]) + b"0"
    bomb += b"h" + bytes([40])
    yield "pt-shared-bomb.pt", checkpoint(bomb, {"0": FLOATS4})
    # Two paths that spell one name: {"a.b": t, "a": {"b": t}}.
    t = tensor("0", 4, [4], [1])
    yield "pt-duplicate-name.pt", checkpoint(b"}" + ustr("a.b") + t + b"s" + ustr("a") + b"}" + ustr("b") + t + b"ss",
                                             {"0": FLOATS4})
    yield "pt-two-pickles.pt", two_pickles()
    yield "pt-legacy-pickle.pt", b"\x80\x02" + binint(7) + b"."

    # Zip-level damage, on an .npz of one array.
    base = npz({"x": np.arange(16, dtype=np.float32)})
    data_at = base.index(b"\x93NUMPY")
    yield "npz-bad-crc.npz", patch(base, data_at + 130, b"\xff")
    yield "npz-truncated.npz", base[:-10]
    cd = central(base)
    end = base.rindex(b"PK\x05\x06")
    yield "npz-cd-outside.npz", patch(base, end + 16, struct.pack("<I", len(base) + 100))
    yield "npz-encrypted.npz", patch(base, cd + 8, struct.pack("<H", 1))
    yield "npz-method-bzip2.npz", patch(base, cd + 10, struct.pack("<H", 12))
    yield "npz-local-header-moved.npz", patch(base, cd + 42, struct.pack("<I", 7))
    yield "npz-bad-npy.npz", patch(base, data_at, b"\x93NUMPZ")
    comp = npz({"x": np.zeros(1 << 12, dtype=np.float32)}, compressed=True)
    ccd = central(comp)
    yield "npz-deflate-bomb.npz", patch(comp, ccd + 24, struct.pack("<I", 0xFFFFFFF0))
    yield "npz-deflate-corrupt.npz", patch(comp, comp.index(b"PK\x03\x04") + 30 + len("x.npy") + 20, b"\xff\xff\xff")
    short = npz({"x": np.arange(4, dtype=np.float32)})
    yield "npz-data-short.npz", short.replace(b"'shape': (4,)", b"'shape': (9,)")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x.npy", b"")
        z.writestr("y.npy", b"")
    yield "npz-duplicate.npz", buf.getvalue().replace(b"y.npy", b"x.npy")


def two_pickles():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a/data.pkl", b"\x80\x02}.")
        z.writestr("b/data.pkl", b"\x80\x02}.")
    return buf.getvalue()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/malformed"
    os.makedirs(out, exist_ok=True)
    n = 0
    for name, data in cases():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        n += 1
    print(f"wrote {n} files to {out}")


if __name__ == "__main__":
    main()
