# A checkpoint that restores far more than it stores: a 320 MiB tensor of zeros saved
# compressed, and a next step stored as an XOR delta against it. `tckpt restore` reads
# a tensor a piece at a time (16 MiB, and the same piece of a delta's base), so
# restoring either step to a pipe or to a file keeps the peak RSS under 256 MB, and the
# bytes are the ones saved.
"$PY" -c "
import json, struct
n = 320 << 20
h = json.dumps({'w': {'dtype': 'F32', 'shape': [n // 4], 'data_offsets': [0, n]}}).encode()
h += b' ' * (-len(h) % 8)
for name, poke in (('a.safetensors', b''), ('b.safetensors', b'\x01\x02\x03\x04')):
    with open(name, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h)
        f.truncate(8 + len(h) + n)
        f.seek(8 + len(h) + (n // 2))
        f.write(poke)"
tckpt save C --step 1 a.safetensors --compress lossless --incremental -q
tckpt save C --step 2 b.safetensors --compress lossless --incremental -q
rm a.safetensors
for s in 1 2; do
  "$PY" -c "import json; print('step $s:', json.load(open('C/step-$s/manifest.json'))['tensors'][0]['encoding'])"
done
[ "$(du -sk C | cut -f1)" -lt 1024 ] && echo "checkpoint under 1 MB"
peak() { "$PY" "$TK_SRC/tests/cli/tcompress/peak_rss.py" 256 "$@"; }
peak tckpt restore C --step 1 -o - -q
peak tckpt restore C --step 2 -o - -q
peak tckpt restore C --step 2 -o out.safetensors -q
"$PY" -c "
import numpy as np, safetensors.numpy as st
a, b = st.load_file('b.safetensors')['w'], st.load_file('out.safetensors')['w']
print('step 2 restored bit for bit' if a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32)) else 'DIFFERS')"
