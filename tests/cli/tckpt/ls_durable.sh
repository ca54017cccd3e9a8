# tckpt ls shows the durable tier's state without being told where it is: the writer
# records the tier in DIR/durable. A recorded tier that is gone is a warning, not an error.
tckpt save ck --durable tier2 "$TD/tiny.safetensors" -q
tckpt save ck "$TD/tiny.safetensors" -q
tckpt ls ck 2>err | awk '{print $1, $(NF-1)}'
sed "s|$PWD/||" err
tckpt ls ck --json - 2>/dev/null | $PY -c 'import json, os, sys; d = json.load(sys.stdin); print(os.path.basename(d["durable"]), [s["state"] for s in d["steps"]])'
mv tier2 gone
tckpt ls ck 2>err | awk '{print $1, $(NF-1)}'; echo "rc ${PIPESTATUS[0]}"
sed "s|$PWD/||" err | cut -c1-60
