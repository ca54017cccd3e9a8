# HDF5 ends a name at its first NUL: a tensor "a\0b" beside "a" would be written over
# it. tconvert refuses with exit 3 (invalid input, not an I/O error), one line naming
# both tensors with the NUL shown as \0, and leaves no output file.
"$PY" - <<'PY'
import json, struct
header = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "a\x00b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
open("nul.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + bytes(8))
PY
tconvert nul.safetensors -o out.h5 2>err
rc=$?
echo "exit $rc, $(wc -l <err) stderr line(s)"
test -e out.h5 && echo "output written"
cat err >&2
exit $rc
