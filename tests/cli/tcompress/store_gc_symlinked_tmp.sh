# A store's tmp/ replaced by a symbolic link to someone else's directory: gc refuses
# (exit 3, naming DIR/tmp) and the files there are untouched.
$PY "$(dirname "$0")/store_models.py" m 2
mkdir victim && echo keep >victim/notes.txt
tcompress store add --store S m/base.safetensors -q
rm -r S/tmp && ln -s ../victim S/tmp
tcompress store gc --store S
rc=$?
ls victim
exit $rc
