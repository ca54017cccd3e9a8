# --json - reports the conversion on stdout (the data go to a file).
cp "$TD/tiny.safetensors" .
tconvert -q tiny.safetensors --dtype f16 -t "embed.*" -t position_ids -o e.h5 --json - | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
print(d[\"inputs\"], d[\"output\"], d[\"format\"], d[\"bytes_in\"], d[\"bytes_out\"])
for t in d[\"tensors\"]: print(t[\"name\"], t[\"dtype_in\"], t[\"dtype\"], t[\"shape\"], t[\"bytes\"])
"
