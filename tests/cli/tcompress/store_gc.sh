# rm takes a file out of the listing; gc then frees what nothing refers to, keeping the
# base tensors a fine-tune's BitX objects decode against.
$PY "$(dirname "$0")/store_models.py" m 4
tcompress store add --store S m/base.safetensors -q
tcompress store add --store S m/ft.safetensors --base base.safetensors -q
tcompress store add --store S m/other.safetensors -q
objects() { find S/objects -type f | wc -l; }
echo "objects: $(objects)"
tcompress store rm --store S base.safetensors other.safetensors
tcompress store ls --store S --json - | $PY -c 'import json, sys; print([f["name"] for f in json.load(sys.stdin)["files"]])'
tcompress store gc --store S --json - | $PY -c 'import json, sys; d = json.load(sys.stdin); print("removed", d["objects_removed"])'
echo "objects: $(objects)"
tcompress store get --store S ft.safetensors -o out.safetensors -q && cmp out.safetensors m/ft.safetensors && echo "ft: identical"
tcompress store rm --store S ft.safetensors -q
tcompress store gc --store S
echo "objects: $(objects)"
