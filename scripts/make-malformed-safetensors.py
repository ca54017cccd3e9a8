#!/usr/bin/env python3
"""Write the malformed safetensors corpus: one tiny file per validation rule of the
reader, plus truncations of a valid file in each region.

    scripts/make-malformed-safetensors.py [OUTDIR]      (default: testdata/malformed)
    scripts/make-malformed-safetensors.py --check [OUTDIR]

Every file must be rejected by tensorkit with exit code 3 (tests/cli/tinfo/
malformed_safetensors.sh, tests/unit/io/safetensors_test.cpp). --check also loads each
file with the Python reference (safetensors) and reports which ones it accepts; the
only ones it may accept are listed in REFERENCE_ACCEPTS, where tensorkit is stricter
on purpose.
"""
import os
import struct
import sys

# Rejected by tensorkit, accepted by the reference implementation (0.8).
REFERENCE_ACCEPTS = {
    "st-duplicate-tensor": "the reference keeps the last duplicate silently",
    "st-entry-array": "serde reads a struct from a sequence",
}

ENTRY = '"dtype":"U8","shape":[1],"data_offsets":[0,1]'


def with_length(header, data=b"", n=None):
    """Length prefix (the real length unless `n` is given), header bytes, data."""
    hb = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(hb) if n is None else n) + hb + data


def valid_file():
    """A valid two-tensor file as the reference writer lays it out."""
    header = ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
              '"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}')
    header += " " * ((8 - len(header) % 8) % 8)
    data = struct.pack("<2f", 1.5, -2.0) + b"\x01\x02\x03"
    return with_length(header, data), 8 + len(header)


def one(entry, data=b"x"):
    """A file with one tensor 'a' whose entry is `entry`."""
    return with_length('{"a":{%s}}' % entry, data)


def corpus():
    files = {}
    valid, data_start = valid_file()

    # Length prefix and header extent.
    files["st-empty"] = b""
    files["st-file-too-short"] = b"\x10\x00\x00\x00\x00"
    files["st-header-length-zero"] = with_length("")
    files["st-header-too-large"] = with_length("{}", n=100_000_001)
    files["st-header-length-max"] = with_length("{}", n=2**64 - 1)
    files["st-header-past-eof"] = with_length("{}", n=1000)

    # Encoding and JSON syntax.
    files["st-non-utf8"] = with_length(b'{"a\xff":{' + ENTRY.encode() + b'}}', b"x")
    files["st-utf8-overlong"] = with_length(b'{"a\xc0\xaf":{' + ENTRY.encode() + b'}}', b"x")
    files["st-utf8-surrogate"] = with_length(b'{"a\xed\xa0\x80":{' + ENTRY.encode() + b'}}', b"x")
    files["st-utf8-bom"] = with_length(b'\xef\xbb\xbf{"a":{' + ENTRY.encode() + b'}}', b"x")
    files["st-invalid-json"] = with_length('{"a":{"dtype":"U8",', b"x")
    files["st-trailing-comma"] = with_length('{"a":{%s},}' % ENTRY, b"x")
    files["st-trailing-garbage"] = with_length('{"a":{%s}}x' % ENTRY, b"x")
    files["st-nul-padding"] = with_length('{"a":{%s}}\0\0' % ENTRY, b"x")
    files["st-lone-surrogate"] = with_length('{"a\\ud800":{%s}}' % ENTRY, b"x")
    files["st-control-char"] = with_length('{"a\x01":{%s}}' % ENTRY, b"x")
    files["st-too-deep"] = with_length('{"a":{%s,"x":%s%s}}' % (ENTRY, "[" * 130, "]" * 130), b"x")
    files["st-header-not-object"] = with_length('[{"a":1}]')
    files["st-header-string"] = with_length(' "abc"')

    # Entries and fields.
    files["st-entry-not-object"] = with_length('{"a":5}')
    files["st-entry-null"] = with_length('{"a":null}')
    files["st-entry-array"] = with_length('{"a":["U8",[1],[0,1]]}', b"x")
    files["st-unknown-dtype"] = one('"dtype":"F7","shape":[1],"data_offsets":[0,1]')
    files["st-dtype-lowercase"] = one('"dtype":"u8","shape":[1],"data_offsets":[0,1]')
    files["st-dtype-not-string"] = one('"dtype":1,"shape":[1],"data_offsets":[0,1]')
    files["st-missing-dtype"] = one('"shape":[1],"data_offsets":[0,1]')
    files["st-missing-shape"] = one('"dtype":"U8","data_offsets":[0,1]')
    files["st-missing-offsets"] = one('"dtype":"U8","shape":[1]')
    files["st-duplicate-field"] = one('"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]')
    files["st-shape-not-array"] = one('"dtype":"U8","shape":1,"data_offsets":[0,1]')
    files["st-shape-negative"] = one('"dtype":"U8","shape":[-1],"data_offsets":[0,1]')
    files["st-shape-float"] = one('"dtype":"U8","shape":[1.0],"data_offsets":[0,1]')
    files["st-shape-string"] = one('"dtype":"U8","shape":["1"],"data_offsets":[0,1]')
    files["st-shape-overflow"] = one('"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,1]')
    files["st-shape-bits-overflow"] = one('"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,1]')
    files["st-shape-dim-u64"] = one('"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,1]')
    files["st-offsets-not-array"] = one('"dtype":"U8","shape":[1],"data_offsets":1')
    files["st-offsets-one"] = one('"dtype":"U8","shape":[1],"data_offsets":[1]')
    files["st-offsets-three"] = one('"dtype":"U8","shape":[1],"data_offsets":[0,1,2]')
    files["st-offsets-negative"] = one('"dtype":"U8","shape":[0],"data_offsets":[-1,-1]', b"")
    files["st-offsets-float"] = one('"dtype":"U8","shape":[1],"data_offsets":[0,1.5]')

    # Metadata.
    files["st-metadata-string"] = with_length('{"__metadata__":"x"}')
    files["st-metadata-array"] = with_length('{"__metadata__":[]}')
    files["st-metadata-number-value"] = with_length('{"__metadata__":{"k":1}}')
    files["st-metadata-null-value"] = with_length('{"__metadata__":{"k":null}}')
    files["st-metadata-object-value"] = with_length('{"__metadata__":{"k":{}}}')
    files["st-metadata-duplicate"] = with_length('{"__metadata__":{},"__metadata__":{}}')

    # Offsets and sizes.
    u8 = lambda name, b, e, n: '"%s":{"dtype":"U8","shape":[%d],"data_offsets":[%d,%d]}' % (name, n, b, e)
    files["st-offsets-not-from-zero"] = with_length("{%s}" % u8("a", 1, 2, 1), b"xx")
    files["st-offsets-hole"] = with_length("{%s,%s}" % (u8("a", 0, 1, 1), u8("b", 2, 3, 1)), b"xxx")
    files["st-offsets-overlap"] = with_length("{%s,%s}" % (u8("a", 0, 2, 2), u8("b", 1, 3, 2)), b"xxx")
    files["st-offsets-end-before-begin"] = with_length("{%s,%s}" % (u8("a", 0, 2, 2), u8("b", 2, 1, 0)), b"xx")
    files["st-size-mismatch"] = one('"dtype":"F32","shape":[3],"data_offsets":[0,8]', b"x" * 8)
    files["st-size-zero-dim"] = one('"dtype":"F32","shape":[0],"data_offsets":[0,4]', b"x" * 4)
    files["st-f4-odd-count"] = one('"dtype":"F4","shape":[3],"data_offsets":[0,2]', b"xx")
    files["st-f6-partial-byte"] = one('"dtype":"F6_E2M3","shape":[3],"data_offsets":[0,3]', b"xyz")
    files["st-duplicate-tensor"] = with_length("{%s,%s}" % (u8("a", 0, 1, 1), u8("a", 0, 1, 1)), b"x")
    files["st-trailing-bytes"] = valid + b"\0"

    # Truncations of a valid file in each region.
    files["st-truncated-length"] = valid[:4]
    files["st-truncated-after-length"] = valid[:8]
    files["st-truncated-header"] = valid[: 8 + (data_start - 8) // 2]
    files["st-truncated-data"] = valid[: data_start + 5]
    files["st-truncated-last-byte"] = valid[:-1]
    return files


def check_with_reference(outdir, names):
    from safetensors import deserialize

    bad = 0
    for name in names:
        with open(os.path.join(outdir, name + ".safetensors"), "rb") as f:
            data = f.read()
        try:
            deserialize(data)
            accepted = True
        except Exception:
            accepted = False
        if accepted and name not in REFERENCE_ACCEPTS:
            print(f"{name}: accepted by the reference but not listed in REFERENCE_ACCEPTS")
            bad = 1
        elif not accepted and name in REFERENCE_ACCEPTS:
            print(f"{name}: rejected by the reference but listed in REFERENCE_ACCEPTS")
            bad = 1
    return bad


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    outdir = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "testdata", "malformed")
    os.makedirs(outdir, exist_ok=True)
    files = corpus()
    for name, data in files.items():
        assert len(data) <= 512, name
        with open(os.path.join(outdir, name + ".safetensors"), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {outdir}")
    if check:
        sys.exit(check_with_reference(outdir, files))


if __name__ == "__main__":
    main()
