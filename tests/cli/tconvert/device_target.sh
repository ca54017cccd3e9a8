# A device as -o target is written directly, never replaced by a rename: /dev/null takes
# the data and stays a device; /dev/full fails with an I/O error (exit 4).
tconvert "$TD/tiny.safetensors" -o /dev/null || exit 11
[ -c /dev/null ] || exit 10
tconvert "$TD/tiny.safetensors" -o /dev/full
rc=$?
[ -c /dev/full ] || exit 12
exit $rc
