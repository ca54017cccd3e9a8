# An error about a tensor whose name holds ESC sequences and a NUL is one line, with the
# whole name shown escaped (nothing raw reaches the terminal, nothing is cut at the NUL),
# and without the notices (an integer tensor passed through) of a run that failed.
"$PY" - <<'PY'
import json, struct
import numpy as np
name = "bad\x1b[2J\x00tail"
header = {"ids": {"dtype": "I32", "shape": [2], "data_offsets": [512, 520]},
          name: {"dtype": "F32", "shape": [4, 32], "data_offsets": [0, 512]}}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
data = np.full((4, 32), np.nan, np.float32).tobytes() + bytes(8)
open("nan.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
tquant nan.safetensors --scheme int4 --min-elements 1 -o q.safetensors 2>err
rc=$?
echo "exit $rc, $(wc -l <err) stderr line(s), $(LC_ALL=C tr -d '\n' <err | LC_ALL=C tr -d '[:print:]' | wc -c) control bytes"
cat err >&2
exit $rc
