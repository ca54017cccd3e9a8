# Craft hostile .tkz containers for the tcompress cases, written from the layout in
# include/tk/codec/container_format.h and lossless.cpp (XXH3 through the system libxxhash):
#
#   tkz_craft.py bomb OUT MIB        valid: one F32 tensor of MIB MiB in 64 MiB chunks of
#                                    constant planes (a few KB that restore to MIB MiB)
#   tkz_craft.py overclaim OUT       a frame claiming 4 GiB with a table it cannot hold
#   tkz_craft.py footer OUT          valid but for the footer's original size (one byte
#                                    more than the records restore), checksums right
#   tkz_craft.py lossy-bomb OUT MIB  valid: one F32 tensor of MIB MiB as a lossy quant
#                                    frame (lossy.cpp) of constant zero chunks
import ctypes
import ctypes.util
import hashlib
import json
import struct
import sys

_xxh = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")  # libxxhash-dev (install-deps)
_xxh.XXH3_64bits_withSeed.restype = ctypes.c_uint64
_xxh.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
_xxh.XXH3_createState.restype = ctypes.c_void_p
_xxh.XXH3_64bits_reset.argtypes = [ctypes.c_void_p]
_xxh.XXH3_64bits_update.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
_xxh.XXH3_64bits_digest.restype = ctypes.c_uint64
_xxh.XXH3_64bits_digest.argtypes = [ctypes.c_void_p]

F32 = 11
MIB = 1 << 20


def xxh3(data, seed=0):
    return _xxh.XXH3_64bits_withSeed(bytes(data), len(data), seed)


class Content:
    """The bytes a tensor decodes to, `count` times `piece`, hashed without holding them."""

    def __init__(self, piece, count, tail=b""):
        self.piece, self.count, self.tail = piece, count, tail

    def size(self):
        return len(self.piece) * self.count + len(self.tail)

    def pieces(self):
        for _ in range(self.count):
            yield self.piece
        if self.tail:
            yield self.tail


def xxh3_of(content):
    state = _xxh.XXH3_createState()
    _xxh.XXH3_64bits_reset(state)
    for p in content.pieces():
        _xxh.XXH3_64bits_update(state, p, len(p))
    return _xxh.XXH3_64bits_digest(state)


def constant_frame(value4, nbytes, chunk_bytes=64 * MIB, elements=None):
    """A lossless F32 frame whose chunks are four constant planes; value4 must be zeros,
    or some value whose four planes are its own bytes in order."""
    elements = nbytes // 4 if elements is None else elements
    chunks = -(-nbytes // chunk_bytes)
    table = b""
    hashes = {}  # by chunk size: every full chunk hashes alike
    for c in range(chunks):
        size = min(chunk_bytes, nbytes - c * chunk_bytes)
        if size not in hashes:
            hashes[size] = xxh3(value4 * (size // 4))
        table += struct.pack("<Q", hashes[size])
        table += b"".join(struct.pack("<BI", 1, 1) for _ in range(4))  # kConstant, 1 byte
    claimed_chunks = -(-elements * 4 // chunk_bytes)  # what the element count needs
    head = b"TKLZ" + bytes([1, F32, 4, 0]) + struct.pack("<QII", elements, chunk_bytes, claimed_chunks)
    head += struct.pack("<Q", xxh3(table, xxh3(head)))
    return head + table + value4 * chunks


def quant_zero_frame(values):
    """A lossy quant frame of a 1-D F32 tensor whose codes are all zero: one plane, every
    chunk of 2^22 codes the constant method (1) with the byte 0."""
    cols = 1
    while cols * cols < values:
        cols += 1
    rows = -(-values // cols)
    padded = -(-cols // 16) * 16
    chunks = -(-rows * padded // (1 << 22))
    body = b"TKLY" + bytes([1, 3, F32, 0]) + struct.pack("<I", 1) + struct.pack("<q", values)
    body += struct.pack("<Q", 0) + struct.pack("<ddd", 0.0, 0.0, 0.0)
    body += struct.pack("<f", 1.0) + struct.pack("<16f", *([0.0] * 16)) + bytes([1])
    body += struct.pack("<I", 2) * chunks + b"\x01\x00" * chunks
    return body + struct.pack("<Q", xxh3(body))


def record(kind, codec, rid, decoded, payload, content_hash):
    h = struct.pack("<BBHIQQQQ", kind, codec, 0, rid, decoded, len(payload), content_hash, 0)
    return h + struct.pack("<Q", xxh3(h))


def container(tensor_bytes, frame, content_hash, sha, original_delta=0, codec=1):
    """A safetensors source with one F32 tensor 'w' of tensor_bytes bytes."""
    js = json.dumps({"w": {"dtype": "F32", "shape": [tensor_bytes // 4], "data_offsets": [0, tensor_bytes]}}).encode()
    js += b" " * (-len(js) % 8)
    original_header = struct.pack("<Q", len(js)) + js
    fh = b"TKZ" + bytes([1, 1, 0, 0, 0]) + struct.pack("<Q", len(original_header)) + bytes(32) + bytes(8)
    fh += original_header
    fh += struct.pack("<Q", xxh3(fh))
    rec = record(1, codec, 0, tensor_bytes, frame, content_hash) + frame
    original = len(original_header) + tensor_bytes
    end = record(0, 0, 1, original, b"", 0)
    index = struct.pack("<I", 1) + b"w" + struct.pack("<BBIQQQ", 1, codec, 0, len(fh), tensor_bytes, len(frame))
    index_offset = len(fh) + len(rec) + len(end)
    footer = struct.pack("<QQQQ", index_offset, len(index), 1, original + original_delta) + sha(original_header)
    footer += struct.pack("<Q", xxh3(index + footer)) + b"TKZINDEX"
    return fh + rec + end + index + footer


def main():
    what, out = sys.argv[1], sys.argv[2]
    value4 = bytes(4)  # zeros: every byte plane (byte_planes.h regroups the bits) is 0
    if what == "overclaim":
        # 4 GiB in 256-byte chunks needs a 16M-entry table; the frame has one entry.
        frame = constant_frame(value4, 256, chunk_bytes=256, elements=1 << 30)
        tkz = container(4 << 30, frame, 0, lambda h: bytes(32))
    else:
        nbytes = (int(sys.argv[3]) if what in ("bomb", "lossy-bomb") else 1) * MIB
        content = Content(value4 * (MIB // 4), nbytes // MIB)

        def sha(original_header):
            s = hashlib.sha256(original_header)
            for p in content.pieces():
                s.update(p)
            return s.digest()

        if what == "lossy-bomb":
            frame = quant_zero_frame(nbytes // 4)
            tkz = container(nbytes, frame, xxh3(frame), sha, codec=5)
        else:
            tkz = container(nbytes, constant_frame(value4, nbytes), xxh3_of(content), sha,
                            original_delta=1 if what == "footer" else 0)
    with open(out, "wb") as f:
        f.write(tkz)


if __name__ == "__main__":
    main()
