# Decompression bombs: containers of under 1 KB that restore a 320 MiB tensor, valid in
# every checksum: lossless (64 MiB chunks of constant byte planes) and lossy (a quant
# frame of constant zero chunks). Restoring either whole (-d) or the tensor alone
# (-d -t), from a file or a pipe, to a pipe or an HDF5 file keeps the peak RSS under
# 256 MB: memory is bounded by a chunk (a unit of rows for lossy), not by the tensor.
# (By hand, the same containers at 4 GiB: see docs/TKZ.md.)
peak() { "$PY" "$TK_SRC/tests/cli/tcompress/peak_rss.py" 256 "$@"; }
for kind in bomb lossy-bomb; do
  echo "$kind:"
  "$PY" "$TK_SRC/tests/cli/tcompress/tkz_craft.py" $kind $kind.tkz 320
  [ "$(stat -c %s $kind.tkz)" -lt 1024 ] && echo "container under 1 KB"
  peak tcompress -q -d $kind.tkz -o -
  peak --stdin $kind.tkz tcompress -q -d - -o -
  peak tcompress -q -d -t w $kind.tkz -o -
  peak --stdin $kind.tkz tcompress -q -d -t w - -o -
  # HDF5 takes the tensor in pieces too (hyperslabs), to a file or to stdout (through
  # a temporary file that HDF5 writes by seeking, unlinked at once).
  peak tcompress -q -d -t w $kind.tkz -o $kind.h5
  peak tcompress -q -d -t w $kind.tkz --format hdf5 -o -
  "$PY" -c "
import h5py
d = h5py.File('$kind.h5')['w']
print(d.dtype, d.shape, 'all zero' if not any(d[i:i + (1 << 24)].any() for i in range(0, d.shape[0], 1 << 24)) else 'NOT ZERO')"
done
# The lossless bytes are right: the restored file's SHA-256 is checked against the
# footer's (a lossy record restores an approximation, checked above as all zero).
tcompress -d bomb.tkz -o - 2>&1 >/dev/null | grep -o "SHA-256 verified"
