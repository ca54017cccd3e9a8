# An objects/xx directory replaced by a symbolic link to someone else's directory
# holding files named like objects: gc refuses (exit 3, naming it) rather than delete
# them; verify reports it and verify --repair removes the link, not what it points at.
$PY "$(dirname "$0")/store_models.py" m 2
tcompress store add --store S m/base.safetensors -q
tcompress store rm --store S base.safetensors -q
shard=$(ls S/objects | head -1)
mkdir victim && mv "S/objects/$shard" victim/ && ln -s "../../victim/$shard" "S/objects/$shard"
before=$(ls "victim/$shard")
tcompress store gc --store S 2>gc.err
echo "gc: exit $? $(grep -c "expected a directory, found a symbolic link (S/objects/$shard)" gc.err)"
test "$(ls "victim/$shard")" = "$before" && echo "victim: untouched"
tcompress store verify --store S 2>verify.err
echo "verify: exit $? $(grep -c "S/objects/$shard" verify.err)"
tcompress store verify --store S --repair -q
echo "verify --repair: exit $?"
test -e "S/objects/$shard" || echo "link: removed"
test "$(ls "victim/$shard")" = "$before" && echo "victim: untouched"
tcompress store gc --store S -q && echo "gc: exit 0"
