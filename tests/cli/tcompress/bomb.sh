# A decompression bomb: a container of under 1 KB that restores a 320 MiB tensor
# (64 MiB chunks of constant byte planes, valid in every checksum). Restoring it whole
# (-d) or the tensor alone (-d -t), from a file or a pipe, to a pipe or an HDF5 file
# keeps the peak RSS under 256 MB: memory is bounded by a chunk, not by the tensor.
# (By hand, the same container at 4 GiB: see docs/TKZ.md.)
"$PY" "$TK_SRC/tests/cli/tcompress/tkz_craft.py" bomb bomb.tkz 320
[ "$(stat -c %s bomb.tkz)" -lt 1024 ] && echo "container under 1 KB"
peak() { "$PY" "$TK_SRC/tests/cli/tcompress/peak_rss.py" 256 "$@"; }
peak tcompress -q -d bomb.tkz -o -
peak --stdin bomb.tkz tcompress -q -d - -o -
peak tcompress -q -d -t w bomb.tkz -o -
peak --stdin bomb.tkz tcompress -q -d -t w - -o -
# HDF5 takes the tensor in pieces too (hyperslabs), to a file or to stdout (through a
# temporary file that HDF5 writes by seeking, unlinked at once).
peak tcompress -q -d -t w bomb.tkz -o w.h5
peak tcompress -q -d -t w bomb.tkz --format hdf5 -o -
"$PY" -c "
import h5py
d = h5py.File('w.h5')['w']
print(d.dtype, d.shape, 'all zero' if not any(d[i:i + (1 << 24)].any() for i in range(0, d.shape[0], 1 << 24)) else 'NOT ZERO')"
# The bytes are right: the restored file's SHA-256 is checked against the footer's.
tcompress -d bomb.tkz -o - 2>&1 >/dev/null | grep -o "SHA-256 verified"
