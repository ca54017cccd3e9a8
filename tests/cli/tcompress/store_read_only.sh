# A store the user cannot write (a read-only mount) is still read: get, ls, stats and
# verify take a shared lock on a read-only descriptor, or none when there is no lock
# file; gc, which deletes, fails. Root ignores file modes, so the store is made
# read-only by a read-only bind mount in a user namespace (unshare); where that is not
# allowed, by running as nobody on a store owned by root.
$PY "$(dirname "$0")/store_models.py" m 2
tcompress store add --store S m/base.safetensors -q
if unshare -rm sh -c 'mount --bind -o ro S S' 2>/dev/null; then
  ro() { unshare -rm sh -c 'mount --bind -o ro S S && exec "$@"' sh "$@"; }
elif [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  chmod -R go-w S && chmod go+rx . && chmod -R go+rX S m
  ro() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
else
  echo "no way to make the store read-only here" >&2
  exit 99
fi
ro touch S/probe 2>/dev/null && echo "store is writable: the case tests nothing"
for lock in with without; do
  [ $lock = without ] && rm S/lock
  ro tcompress store get --store S base.safetensors -o - -q | cmp - m/base.safetensors && echo "get ($lock lock): identical"
  ro tcompress store ls --store S | cut -d' ' -f1
  ro tcompress store stats --store S --json - | $PY -c 'import json, sys; print("stats: files", len(json.load(sys.stdin)["files"]))'
  ro tcompress store verify --store S -q && echo "verify: exit 0"
done
ro tcompress store gc --store S -q 2>/dev/null
echo "gc: exit $?"
