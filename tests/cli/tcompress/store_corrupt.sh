# A flipped bit in a tensor's object: get fails with exit 3 naming the tensor and the
# object, and writes nothing under the output name.
$PY "$(dirname "$0")/store_models.py" m 3
tcompress store add --store S m/base.safetensors -q
key=$($PY -c '
import json, sys
m = json.load(open("S/manifests/base.safetensors.json"))
print([s["key"] for s in m["segments"] if s.get("tensor") == "layers.1.weight"][0])')
obj=S/objects/${key:0:2}/$key
$PY -c '
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 4
open(p, "wb").write(b)' "$obj"
tcompress store get --store S base.safetensors -o out.safetensors
rc=$?
test -e out.safetensors && echo "output written"
exit $rc
