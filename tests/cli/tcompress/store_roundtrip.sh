# Base, fine-tunes, an unrelated model, a tiny file and a non-safetensors file go in;
# each comes back byte for byte; fine-tunes are BitX deltas against the base.
$PY "$(dirname "$0")/store_models.py" m
head -c 5000 /dev/urandom > m/blob.bin
tcompress store add --store S m/base.safetensors m/other.safetensors "$TD/tiny.safetensors" m/blob.bin -q
tcompress store add --store S m/ft.safetensors m/ft10.safetensors --json add.json -q
for f in base other ft ft10; do
  tcompress store get --store S $f.safetensors -o out.safetensors -f -q && cmp out.safetensors m/$f.safetensors && echo "$f: identical"
done
tcompress store get --store S tiny.safetensors -q | cmp - "$TD/tiny.safetensors" && echo "tiny: identical"
tcompress store get --store S blob.bin -o - -q | cmp - m/blob.bin && echo "blob: identical"
$PY - <<'PY'
import json
for f in json.load(open("add.json"))["added"]:
    print(f["name"], f["tensors"], f["tensors_existing"], f["tensors_delta"], f["base"])
PY
tcompress store ls --store S --json - | $PY -c '
import json, sys
for f in json.load(sys.stdin)["files"]:
    print(f["name"], f["kind"], f["logical_bytes"], f["tensors"], f["base"], f["stored_bytes"] < f["logical_bytes"])'
