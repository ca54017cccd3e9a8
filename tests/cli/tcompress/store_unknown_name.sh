# An unknown name is invalid input; nothing is written under the output name.
tcompress store add --store S "$TD/tiny.safetensors" -q
tcompress store get --store S other.safetensors -o out.safetensors
rc=$?
test -e out.safetensors && echo "output written"
exit $rc
