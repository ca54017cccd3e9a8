# A fine-tune whose BitX base object is gone: exit 3, "missing base object", naming the
# tensor and both objects.
$PY "$(dirname "$0")/store_models.py" m 3
tcompress store add --store S m/base.safetensors -q
tcompress store add --store S m/ft.safetensors -q
key=$($PY -c '
import json
m = json.load(open("S/manifests/base.safetensors.json"))
print([s["key"] for s in m["segments"] if s.get("tensor") == "layers.2.weight"][0])')
rm "S/objects/${key:0:2}/$key"
tcompress store get --store S ft.safetensors -o out.safetensors
