#!/usr/bin/env python3
"""Write the malformed HDF5 corpus testdata/malformed/hdf5-*.h5 (each under 10 KB):
a small valid file written by h5py, then cut or corrupted at known places. Every file
must make the readers fail cleanly with "invalid input" when opened (before any data is
read), including the one that crashes libhdf5 itself. Rerunning reproduces the same corruptions (the valid base may differ in bytes
HDF5 does not check, such as object timestamps).
"""
import io
import os
import struct

import h5py
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "malformed")
MAGIC = b"\x89HDF\r\n\x1a\n"


def base_file():
    """A valid file and the file offsets of the contiguous data of its datasets."""
    buf = io.BytesIO()
    with h5py.File(buf, "w", libver="earliest") as f:
        f.attrs["title"] = "malformed corpus base"
        g = f.create_group("a")
        g.create_dataset("b", data=np.arange(64, dtype=np.float32).reshape(8, 8), track_times=False)
        f.create_dataset("c", data=np.arange(64, dtype=np.int16), track_times=False)
        f.flush()
        offsets = {name: f[name].id.get_offset() for name in ("a/b", "c")}
    return bytearray(buf.getvalue()), offsets


def find_unique(data, needle):
    at = data.find(needle)
    assert at >= 0 and data.find(needle, at + 1) < 0, "pattern not unique"
    return at


def main():
    os.makedirs(OUT, exist_ok=True)
    data, offsets = base_file()
    size = len(data)
    first_data = min(offsets.values())
    files = {}
    # Truncations: inside the superblock, inside the object headers, inside the data.
    files["hdf5-truncated-superblock.h5"] = data[:40]
    files["hdf5-truncated-headers.h5"] = data[: first_data // 2]
    files["hdf5-truncated-data.h5"] = data[: offsets["c"] + 64]
    files["hdf5-truncated-last-byte.h5"] = data[: size - 1]
    # The superblock version byte right after the magic.
    bad = bytearray(data)
    bad[8] = 0x7F
    files["hdf5-bad-superblock-version.h5"] = bad
    # The magic followed by garbage.
    rng = np.random.default_rng(7)
    files["hdf5-garbage-after-magic.h5"] = MAGIC + rng.integers(0, 256, 2040, dtype=np.uint8).tobytes()
    # Dataset c's layout message points its 128 bytes of data 64 bytes before the end.
    past = bytearray(data)
    at = find_unique(past, struct.pack("<QQ", offsets["c"], 128))
    past[at : at + 8] = struct.pack("<Q", size - 64)
    files["hdf5-data-past-eof.h5"] = past
    # Dataset a/b's dataspace claims 2^20 x 2^20 elements (4 TiB of float32).
    huge = bytearray(data)
    at = find_unique(huge, struct.pack("<QQQQ", 8, 8, 8, 8))  # dims then max dims
    huge[at : at + 32] = struct.pack("<QQQQ", 1 << 20, 1 << 20, 1 << 20, 1 << 20)
    files["hdf5-huge-dims.h5"] = huge
    # The root attribute "title", a variable-length string, names object 1 of the global
    # heap collection; name object 100 instead (past the last, within the table libhdf5 1.10
    # allocates for the collection, so its entry is zero), which it looks up without a
    # bounds check (it crashes the process that reads the attribute).
    heap = bytearray(data)
    gcol = find_unique(heap, b"GCOL")
    title = len("malformed corpus base")
    at = find_unique(heap, struct.pack("<IQI", title, gcol, 1))
    heap[at + 12 : at + 16] = struct.pack("<I", 100)
    files["hdf5-vlen-heap-index.h5"] = heap
    # The root group's name heap, as the symbol table message of its object header names it
    # (its B-tree and heap addresses also sit in the superblock's root entry, at bytes 80
    # and 88), made the undefined address (all ones): libhdf5 1.10's check of a read against
    # the end of the file overflows on it, and listing the group faults.
    root = bytearray(data)
    btree, cached = struct.unpack_from("<QQ", root, 80)
    assert root[8] == 0 and root[cached : cached + 4] == b"HEAP"
    at = find_unique(root[96:], struct.pack("<QQ", btree, cached)) + 96
    root[at + 8 : at + 16] = b"\xff" * 8
    files["hdf5-root-heap-undefined.h5"] = root
    for name, content in files.items():
        assert len(content) < 10_000
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes(content))
    print(f"wrote {len(files)} files to {OUT}")


if __name__ == "__main__":
    main()
