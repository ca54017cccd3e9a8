# Craft hostile zstd frames for the tcompress cases, from the frame format (RFC 8878,
# section 3.1.1): a frame header, blocks (3-byte header: size << 3 | type << 1 | last),
# then a 4-byte checksum when the header's flag asks for one.
#
#   zstd_craft.py claim OUT MIB   a 1 MiB window, a content size of 2^40 bytes, and
#                                 RLE blocks that give only MIB MiB (a checksum of 0)
#   zstd_craft.py segment OUT     a single segment (window = content size) of 2^40 bytes
#   zstd_craft.py dictionary OUT  a valid-looking frame of "hello" that needs dictionary 7
import struct
import sys

MAGIC = bytes([0x28, 0xB5, 0x2F, 0xFD])
CHECKSUM, SINGLE_SEGMENT = 0x04, 0x20
RAW, RLE = 0, 1
MAX_BLOCK = 128 << 10


def block(kind, size, last, content):
    return struct.pack("<I", size << 3 | kind << 1 | last)[:3] + content


mode, out = sys.argv[1], sys.argv[2]
if mode == "claim":
    blocks = int(sys.argv[3]) * 8  # 128 KiB each
    frame = MAGIC + bytes([0xC0 | CHECKSUM, 10 << 3]) + struct.pack("<Q", 1 << 40)
    frame += b"".join(block(RLE, MAX_BLOCK, k == blocks - 1, b"a") for k in range(blocks))
    frame += bytes(4)
elif mode == "segment":
    frame = MAGIC + bytes([0xC0 | SINGLE_SEGMENT | CHECKSUM]) + struct.pack("<Q", 1 << 40)
    frame += block(RAW, 5, 1, b"hello") + bytes(4)
elif mode == "dictionary":
    frame = MAGIC + bytes([SINGLE_SEGMENT | CHECKSUM | 1, 7, 5]) + block(RAW, 5, 1, b"hello") + bytes(4)
else:
    sys.exit(f"unknown mode {mode}")
open(out, "wb").write(frame)
