# -d -t takes repeatable globs and --exclude, from a file or a pipe, into one tensor file
# with the original metadata; the tensors are those of the compressed file, bit for bit.
tcompress -q --container "$TD/tiny.safetensors" -o t.tkz
tcompress -q -d -t 'layers.*' -t special t.tkz -o sel.safetensors
tinfo sel.safetensors
tinfo diff -q sel.safetensors "$TD/tiny.safetensors" -t 'layers.*' -t special && echo "selected: equal"
cat t.tkz | tcompress -q -d --exclude '*weight' -o rest.h5
tinfo rest.h5
tcompress -d -t 'nomatch*' t.tkz -o none.safetensors 2>&1; echo "rc=$?"
test -e none.safetensors || echo "nothing written"
cat t.tkz | tcompress -d --exclude '*' -t '*' -o none.safetensors 2>&1; echo "rc=$?"
