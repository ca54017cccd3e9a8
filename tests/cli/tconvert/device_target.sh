# A device as -o target is refused (it would be replaced by a rename); redirect instead.
tconvert "$TD/tiny.safetensors" -o /dev/null
rc=$?
[ -c /dev/null ] || exit 10
exit $rc
