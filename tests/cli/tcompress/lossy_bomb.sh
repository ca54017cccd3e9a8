# A lossy decompression bomb: a container of under 1 KB whose quant frame (constant zero
# chunks, valid in every checksum) claims a 320 MiB tensor. Lossy frames decode in units
# of rows, so restoring it whole (-d) or the tensor alone (-d -t), from a file or a pipe,
# keeps the peak RSS under 256 MB as for lossless records. (By hand, the same container
# at 4 GiB: docs/TKZ.md.)
"$PY" "$TK_SRC/tests/cli/tcompress/tkz_craft.py" lossy-bomb bomb.tkz 320
[ "$(stat -c %s bomb.tkz)" -lt 1024 ] && echo "container under 1 KB"
peak() { "$PY" "$TK_SRC/tests/cli/tcompress/peak_rss.py" 256 "$@"; }
peak tcompress -q -d bomb.tkz -o -
peak --stdin bomb.tkz tcompress -q -d - -o -
peak tcompress -q -d -t w bomb.tkz -o -
peak --stdin bomb.tkz tcompress -q -d -t w - -o -
# The values are right: all zero.
tcompress -q -d -t w bomb.tkz -o w.safetensors
"$PY" -c "
import numpy as np, safetensors.numpy as st
w = st.load_file('w.safetensors')['w']
print(w.dtype, w.shape, 'all zero' if not w.any() else 'NOT ZERO')"
