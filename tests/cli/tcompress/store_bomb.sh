# A store object that restores far more than it takes: a 320 MiB tensor of zeros is an
# object of a few KB. `store get` and `store verify` decode objects a piece at a time
# (16 MiB), so restoring it to a pipe, to a file, or checking it keeps the peak RSS
# under 256 MB: memory is bounded by a piece, not by the object.
"$PY" -c "
import json, struct
n = 320 << 20
h = json.dumps({'w': {'dtype': 'F32', 'shape': [n // 4], 'data_offsets': [0, n]}}).encode()
h += b' ' * (-len(h) % 8)
with open('zeros.safetensors', 'wb') as f:
    f.write(struct.pack('<Q', len(h)) + h)
    f.truncate(8 + len(h) + n)"
tcompress store add --store S zeros.safetensors -q
rm zeros.safetensors
[ "$(du -sk S | cut -f1)" -lt 1024 ] && echo "store under 1 MB"
peak() { "$PY" "$TK_SRC/tests/cli/tcompress/peak_rss.py" 256 "$@"; }
peak tcompress store get --store S zeros.safetensors -o -
peak tcompress store get --store S zeros.safetensors -o out.safetensors
peak tcompress store verify --store S -q
"$PY" -c "
import safetensors.numpy as st
w = st.load_file('out.safetensors')['w']
print(w.dtype, w.shape, 'all zero' if not w.any() else 'NOT ZERO')"
