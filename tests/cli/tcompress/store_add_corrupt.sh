# An object corrupted in the store: add of the same file does not trust it by name,
# it writes the object again and says so; get then restores the file.
$PY "$(dirname "$0")/store_models.py" m 2
tcompress store add --store S m/base.safetensors -q
key=$($PY -c '
import json
m = json.load(open("S/manifests/base.safetensors.json"))
print([s["key"] for s in m["segments"] if s.get("tensor") == "layers.1.weight"][0])')
$PY -c '
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 4
open(p, "wb").write(b)' "S/objects/${key:0:2}/$key"
tcompress store get --store S base.safetensors -o out.safetensors 2>/dev/null
echo "get: exit $?"
tcompress store add --store S m/base.safetensors 2>add.err
echo "add: exit $? $(grep -c "^tcompress: warning: replaced a corrupt stored object: .*object $key" add.err)"
tcompress store get --store S base.safetensors -o out.safetensors -q && cmp out.safetensors m/base.safetensors &&
  echo "get: identical"
tcompress store verify --store S -q && echo "verify: exit 0"
