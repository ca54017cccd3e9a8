# -d -t NAME decodes one tensor into a file of the format its extension names, from a
# seekable container (through the index) and from a pipe (scanning).
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
tcompress -q m.safetensors -o m.tkz
tcompress -q -d -t layer.0.w m.tkz -o w.npy
cat m.tkz | tcompress -q -d -t ids - -o ids.safetensors
tcompress -q -d -t empty m.tkz -o empty.h5
"$PY" -c "
import numpy as np, h5py
from safetensors.numpy import load_file
m = load_file('m.safetensors')
print('layer.0.w', np.array_equal(np.load('w.npy'), m['layer.0.w']))
print('ids', np.array_equal(load_file('ids.safetensors')['ids'], m['ids']))
print('empty', h5py.File('empty.h5')['empty'].shape)"
