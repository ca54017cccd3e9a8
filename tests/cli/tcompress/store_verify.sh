# verify decodes every object: a corrupt one is named (exit 3) with the files it
# breaks; --repair removes it and names the files left unrestorable until they are
# added again; then verify passes.
$PY "$(dirname "$0")/store_models.py" m 2
tcompress store add --store S m/base.safetensors m/ft.safetensors -q
tcompress store verify --store S && echo "verify: exit 0"
key=$($PY -c '
import json
m = json.load(open("S/manifests/ft.safetensors.json"))
print([s["key"] for s in m["segments"] if s.get("tensor") == "layers.0.weight"][0])')
obj="S/objects/${key:0:2}/$key"
$PY -c '
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-3] ^= 1
open(p, "wb").write(b)' "$obj"
tcompress store verify --store S 2>v.err
echo "verify: exit $? $(grep -c "^tcompress: warning: corrupt object: .*($obj)$" v.err) $(grep -c "manifest of 'ft.safetensors'" v.err)"
tcompress store verify --store S --repair 2>r.err
echo "verify --repair: exit $? $(grep -c "removed $obj" r.err) $(grep -c "^tcompress: ft.safetensors: cannot be restored until it is added again$" r.err)"
test -e "$obj" || echo "object: removed"
tcompress store add --store S m/ft.safetensors -q
tcompress store verify --store S --json - | $PY -c 'import json, sys; d = json.load(sys.stdin); print(d["ok"], d["problems"])'
tcompress store get --store S ft.safetensors -o out.safetensors -q && cmp out.safetensors m/ft.safetensors && echo "ft: identical"
