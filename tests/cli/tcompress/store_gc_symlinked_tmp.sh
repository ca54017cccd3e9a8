# A store's tmp/ replaced by a symbolic link to someone else's directory: gc refuses
# (exit 3, naming DIR/tmp) and the files there are untouched; verify --repair replaces
# the link with a directory, after which gc runs.
$PY "$(dirname "$0")/store_models.py" m 2
mkdir victim && echo keep >victim/notes.txt
tcompress store add --store S m/base.safetensors -q
rm -r S/tmp && ln -s ../victim S/tmp
tcompress store gc --store S
rc=$?
ls victim
tcompress store verify --store S --repair -q 2>/dev/null
echo "verify --repair: exit $?"
test -d S/tmp -a ! -L S/tmp && echo "tmp: a directory again"
tcompress store gc --store S -q && echo "gc: exit 0"
ls victim
exit $rc
