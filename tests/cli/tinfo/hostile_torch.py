#!/usr/bin/env python3
"""Write one small hostile PyTorch checkpoint or .npz for the bounded-resource cases:

    hostile_torch.py CASE OUT

Each file is a few KB (deflated pickles) that once made the readers build hundreds of
megabytes, write gigabytes, or answer wrongly. The pickles are written opcode by opcode
and are never unpickled here.
"""
import importlib.util
import io
import os
import struct
import sys
import zipfile
import zlib

import numpy as np


# The opcode writers are shared with the malformed-archive fixtures' generator.
_archives = importlib.util.spec_from_file_location(
    "make_malformed_archives",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "make-malformed-archives.py"))
_mod = importlib.util.module_from_spec(_archives)
_archives.loader.exec_module(_mod)
ustr, binint, tup, global_, tensor = _mod.ustr, _mod.binint, _mod.tup, _mod.global_, _mod.tensor


def checkpoint(body, storages=None, deflate=True, fillers=0):
    """A torch.save-like zip: a/data.pkl (protocol 2, deflated), a/data/KEY, and
    `fillers` empty entries of names as long as a/data/0 before the storages."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo("a/data.pkl"), b"\x80\x02" + body + b".",
                   compress_type=zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED)
        z.writestr("a/byteorder", b"little")
        for k in range(fillers):
            z.writestr("a/%06d" % k, b"")
        for key, data in (storages or {}).items():
            z.writestr(f"a/data/{key}", data)
    return buf.getvalue()


ONE = struct.pack("<f", 1.5)
FLOATS4 = struct.pack("<4f", 1, 2, 3, 4)


def case(name):
    if name == "opcode-bomb":
        # 1.5 Mi empty lists on the stack: 1.5 MiB of pickle, 2 KB deflated.
        return checkpoint(b"(" + b"]" * (3 << 19))
    if name == "memo-name":
        # One 1 MiB key memoised, then used as the key of a tensor in 200 dicts: 200
        # names of a MiB each.
        body = b"]" + ustr("k" * (1 << 20)) + b"q\x01" + b"0" + tensor("0", 1, [1], [1]) + b"q\x02" + b"0"
        body += b"(" + b"}h\x01h\x02s" * 200 + b"e"
        return checkpoint(body, {"0": ONE})
    if name == "memo-refs":
        # A list of one tensor and 10^6 references to it: 10^6 tensors of one storage.
        return checkpoint(b"]" + tensor("0", 1, [1], [1]) + b"q\x00a(" + b"h\x00" * 10**6 + b"e", {"0": ONE})
    if name == "skip-repeats":
        # A tensor, one 4 KiB key given 1000 times (a dict keeps it once), and a list of
        # the tensor and 10^5 ints: the same skip reasons over and over.
        body = b"}" + ustr("w") + tensor("0", 1, [1], [1]) + b"q\x03s"
        body += ustr("n" * (4 << 10)) + b"q\x01" + b"K\x01q\x02" + b"s"
        body += b"(" + b"h\x01h\x02" * 1000 + b"u"
        body += ustr("ints") + b"](h\x03" + b"K\x07" * 10**5 + b"es"
        return checkpoint(body, {"0": ONE})
    if name == "stride0":
        # One float viewed with stride 0 as 2^27 floats (512 MiB).
        return checkpoint(b"}" + ustr("w") + tensor("0", 1, [1 << 27], [0]) + b"s", {"0": ONE}, deflate=False)
    if name == "many-lookups":
        # 40000 entries, the storage last, and 2 * 10^5 tensors that look it up.
        body = tensor("0", 1, [1], [1]) + b"q\x00" + b"0" + b"}(" + b"".join(
            ustr("t%d" % k) + b"h\x00" for k in range(200000)) + b"u"
        return checkpoint(body, {"0": ONE}, fillers=40000)
    if name == "npz-with-pickle":
        # An .npz of one array, plus an entry named like a checkpoint's pickle.
        buf = io.BytesIO()
        np.savez(buf, x=np.arange(4, dtype=np.float32))
        with zipfile.ZipFile(buf, "a") as z:
            z.writestr("extra/data.pkl", b"\x80\x02}.")
        return buf.getvalue()
    if name == "zip-neither":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("README.txt", "notes")
        return buf.getvalue()
    if name == "overlap":
        # A checkpoint whose byte storage a/data/0 also covers the next entry, a/data/1
        # (its local header and data), with a CRC-32 that matches and a storage id that
        # declares the larger size: each entry lies in the file, but their bytes overlap.
        def build(covered_bytes):
            body = (b"}" + ustr("w") + tensor("0", covered_bytes, [1], [1], storage="ByteStorage") + b"s" +
                    ustr("v") + tensor("1", 4, [4], [1]) + b"s")
            return checkpoint(body, {"0": b"\x01", "1": FLOATS4}, deflate=False)
        data = build(1)
        z = zipfile.ZipFile(io.BytesIO(data))
        first, second = z.getinfo("a/data/0"), z.getinfo("a/data/1")
        start = first.header_offset + 30 + len(first.filename) + len(first.extra)
        end = second.header_offset + 30 + len(second.filename) + len(second.extra) + second.file_size
        data = build(end - start)  # the same layout: only the declared size changed
        covered = data[start:end]
        at = data.index(b"a/data/0", data.index(b"PK\x01\x02")) - 46
        patched = struct.pack("<III", zlib.crc32(covered), len(covered), len(covered))
        return data[:at + 16] + patched + data[at + 28:]
    if name == "npz-zeros":
        # np.savez_compressed of 320 MiB of zeros, written a chunk at a time: 320 KB.
        n = 320 << 20
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % (n // 4)
        header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
        npy_head = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        crc = zlib.crc32(npy_head)
        body = [deflate.compress(npy_head)]
        zeros = bytes(16 << 20)
        for _ in range(n // len(zeros)):
            crc = zlib.crc32(zeros, crc)
            body.append(deflate.compress(zeros))
        body.append(deflate.flush())
        data = b"".join(body)
        name = b"w.npy"
        total = len(npy_head) + n
        local = struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, 8, 0, 33, crc, len(data), total, len(name), 0) + name
        central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, 8, 0, 33, crc, len(data), total,
                              len(name), 0, 0, 0, 0, 0, 0) + name
        end = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 1, 1, len(central), len(local) + len(data), 0)
        return local + data + central + end
    raise SystemExit("unknown case " + name)


if __name__ == "__main__":
    with open(sys.argv[2], "wb") as f:
        f.write(case(sys.argv[1]))
