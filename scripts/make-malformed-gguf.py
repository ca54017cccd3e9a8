#!/usr/bin/env python3
"""Write the malformed GGUF corpus: one small file per rule of the GGUF reader.

    scripts/make-malformed-gguf.py [OUTDIR]      (default: testdata/malformed)

Every file must be rejected by tensorkit with exit code 3 and one line, from a path and
through a pipe (tests/cli/tinfo/malformed_gguf.sh). The files are written field by
field with the standard library only, so that each breaks exactly one rule.
"""
import os
import struct
import sys

U32, STR, ARRAY, BOOL = 4, 8, 9, 7
F32, Q8_0 = 0, 8


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def tensor(name, dims, ggml_type, offset):
    return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", ggml_type, offset)


def gguf(kvs=(), tensors=(), data=b"", version=3, align=32, n_tensors=None, n_kv=None, magic=b"GGUF"):
    """A file: header, the padding to `align`, then `data`."""
    head = magic + struct.pack("<I", version)
    head += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors, len(kvs) if n_kv is None else n_kv)
    head += b"".join(kvs) + b"".join(tensors)
    head += b"\0" * (-len(head) % align)
    return head + data


def f32_tensor(name="w", offset=0):
    return tensor(name, [4], F32, offset)


F32_DATA = struct.pack("<4f", 1, 2, 3, 4) + b"\0" * 16


def corpus():
    name_kv = kv("general.name", STR, s("m"))
    return {
        "bad-magic": gguf(magic=b"GGUX", tensors=[f32_tensor()], data=F32_DATA),
        "version-1": gguf(version=1),
        "big-endian": gguf(version=0x03000000),
        "version-99": gguf(version=99),
        "truncated-header": gguf(kvs=[name_kv], tensors=[f32_tensor()], data=F32_DATA)[:30],
        "huge-tensor-count": gguf(n_tensors=1 << 62),
        "huge-kv-count": gguf(n_kv=1 << 61),
        "huge-key": gguf(kvs=[struct.pack("<Q", 1 << 60) + b"k"]),
        "huge-string-value": gguf(kvs=[s("k") + struct.pack("<IQ", STR, 1 << 59)]),
        "huge-array": gguf(kvs=[kv("k", ARRAY, struct.pack("<IQ", U32, 1 << 61))]),
        "huge-string-array": gguf(kvs=[kv("k", ARRAY, struct.pack("<IQ", STR, 1 << 61))]),
        "nested-array": gguf(kvs=[kv("k", ARRAY, struct.pack("<IQ", ARRAY, 1) + struct.pack("<IQ", U32, 0))]),
        "unknown-value-type": gguf(kvs=[kv("k", 99, b"\0" * 8)]),
        "array-unknown-type": gguf(kvs=[kv("k", ARRAY, struct.pack("<IQ", 77, 1) + b"\0" * 8)]),
        "bad-bool": gguf(kvs=[kv("k", BOOL, b"\x02")]),
        "duplicate-key": gguf(kvs=[name_kv, name_kv]),
        "duplicate-tensor": gguf(tensors=[f32_tensor(), f32_tensor(offset=32)], data=F32_DATA * 2),
        "alignment-not-power-of-two": gguf(kvs=[kv("general.alignment", U32, struct.pack("<I", 24))], align=24),
        "alignment-zero": gguf(kvs=[kv("general.alignment", U32, struct.pack("<I", 0))]),
        "alignment-string": gguf(kvs=[kv("general.alignment", STR, s("32"))]),
        "zero-dimensions": gguf(tensors=[tensor("w", [], F32, 0)], data=F32_DATA),
        "five-dimensions": gguf(tensors=[tensor("w", [1, 1, 1, 1, 4], F32, 0)], data=F32_DATA),
        "dimension-overflow": gguf(tensors=[tensor("w", [1 << 40, 1 << 40], F32, 0)], data=F32_DATA),
        "unknown-ggml-type": gguf(tensors=[tensor("w", [32], 200, 0)], data=F32_DATA),
        "removed-ggml-type": gguf(tensors=[tensor("w", [32], 4, 0)], data=F32_DATA),
        "partial-block": gguf(tensors=[tensor("w", [33], Q8_0, 0)], data=b"\0" * 96),
        "misaligned-offset": gguf(tensors=[f32_tensor(offset=4)], data=F32_DATA * 2),
        "overlapping-tensors": gguf(tensors=[f32_tensor("a"), f32_tensor("b")], data=F32_DATA),
        "data-past-eof": gguf(tensors=[tensor("w", [64], F32, 0)], data=F32_DATA),
        "offset-past-eof": gguf(tensors=[f32_tensor(offset=1 << 62)], data=F32_DATA),
        "trailing-bytes": gguf(tensors=[f32_tensor()], data=F32_DATA + b"\x55" * 100),
        "truncated-tensor-record": gguf(tensors=[f32_tensor()], data=b"")[:-40],
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "testdata", "malformed")
    os.makedirs(out, exist_ok=True)
    for name, data in corpus().items():
        with open(os.path.join(out, f"gguf-{name}.gguf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
