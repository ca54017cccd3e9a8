# HDF5 objects that are not tensors are not lost in silence: a dataset hard-linked under
# two names is a tensor under each (tconvert writes both), and every skipped dataset or
# link gets one warning line naming it and why, also without -v, and stays listed in
# the metadata key hdf5.skipped. A group linked into itself is listed once.
"$PY" - <<'PY'
import h5py, numpy as np
with h5py.File("links.h5", "w") as f:
    f["a"] = np.arange(4, dtype=np.float32)
    f["b"] = f["a"]                                   # hard link: one dataset, two names
    f["soft"] = h5py.SoftLink("/a")
    f["ext"] = h5py.ExternalLink("elsewhere.h5", "/x")
    f["text"] = "a string"
    f["c128"] = np.ones(3, np.complex128)
    f["rec"] = np.zeros(2, dtype=[("x", "f4"), ("y", "i2")])
    g = f.create_group("g")
    g["w"] = np.ones(2, np.int32)
    g["self"] = g                                     # a cycle
PY
tinfo --metadata links.h5 2>err
echo "stderr lines: $(wc -l <err)"
sort err
tconvert links.h5 -o out.safetensors -q 2>/dev/null
"$PY" -c '
from safetensors.numpy import load_file
t = load_file("out.safetensors")
print("converted:", sorted(t), "b == a:", (t["a"] == t["b"]).all())'
