# Tensor names holding ESC, newline, NUL, a backslash, DEL and C1 controls reach the
# listing, diff and error lines escaped (one name, one line; nothing raw for the
# terminal), while JSON output carries the real names exactly.
"$PY" - <<'PY'
import json, struct
names = ["esc\x1b[31mred", "nl\nx", "nul\x00x", "back\\slash", "del\x7f", "csi\x9b2J", "gr\u00fc\u00df"]
header, off = {}, 0
for n in names:
    header[n] = {"dtype": "F32", "shape": [1], "data_offsets": [off, off + 4]}
    off += 4
header["__metadata__"] = {"note\x1b]0;title\x07": "two\nlines"}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
with open("names.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + bytes(off))
with open("names.json", "w") as f:
    json.dump(names, f)
PY
tinfo --metadata names.safetensors >out 2>err
tinfo diff names.safetensors names.safetensors >>out 2>>err
cat out
tinfo --json - names.safetensors 2>>err | "$PY" -c '
import json, sys
got = [t["name"] for t in json.load(sys.stdin)["files"][0]["tensors"]]
want = json.load(open("names.json"))
print("json names exact:", sorted(got) == sorted(want))'
# Controls (C0 but the newlines ending lines, DEL, C1) or bad UTF-8 in stdout or stderr.
"$PY" -c '
text = (open("out", "rb").read() + open("err", "rb").read()).decode("utf-8", "replace")
bad = [c for c in text if (ord(c) < 32 and c != "\n") or 0x7f <= ord(c) <= 0x9f or c == "\ufffd"]
print("raw controls in the output:", len(bad))'
