# HDF5 names may be any bytes, JSON holds only UTF-8: quantizing (the tk metadata) or
# checkpointing (the manifest) a tensor whose name is not UTF-8 is refused with exit 3
# and one line showing the name escaped, instead of an internal error.
"$PY" - <<'PY'
import h5py, numpy as np
with h5py.File("bad.h5", "w") as f:
    f[b"w\xff\x1b[2J"] = np.ones((4, 32), np.float32)
PY
tquant bad.h5 --scheme int4 --min-elements 1 -o q.safetensors 2>err
echo "tquant: exit $?, $(wc -l <err) stderr line(s)"
grep -c "not valid UTF-8" err
tckpt save ck --step 1 bad.h5 2>err
echo "tckpt save: exit $?, $(wc -l <err) stderr line(s)"
grep -c "not valid UTF-8" err
tinfo bad.h5 | tail -1
