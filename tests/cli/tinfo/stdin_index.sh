# JSON on stdin is not a tensor file: a sharded index names files beside it, which a
# stream does not have. Exit 3 with one line.
echo '{"weight_map": {"w": "a.safetensors"}}' | tinfo - 2>err
rc=$?
wc -l <err
cat err >&2
exit $rc
