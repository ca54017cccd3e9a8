# Lossless round trips are byte-identical: safetensors of many dtypes (bf16 and fp8 made
# by tconvert), HDF5 and .npy files (kept as opaque bytes), an empty file.
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
tconvert -q m.safetensors --dtype bf16 -o bf16.safetensors
tconvert -q m.safetensors --dtype f8_e4m3 -o fp8.safetensors
"$PY" -c "import numpy as np; np.save('a.npy', np.arange(1000, dtype=np.int32).reshape(10, 100))"
: > empty.bin
for f in m.safetensors bf16.safetensors fp8.safetensors "$TD/field.h5" a.npy empty.bin; do
  tcompress -q -f "$f" -o c.tkz && tcompress -q -f -d c.tkz -o back && cmp "$f" back && echo "$(basename "$f") identical"
done
