# Without -o, tcompress names files as zstd does: FILE -> FILE.tkz, -d FILE.tkz -> FILE,
# -c to stdout; the input is kept (-k is accepted), and an existing output needs -f.
cp "$TD/tiny.safetensors" m.safetensors
tcompress -q m.safetensors
ls -1 | grep -v '^std'
tcompress -q m.safetensors; echo "rc=$?"
tcompress -q -k -f m.safetensors; echo "rc=$?"
mv m.safetensors orig.safetensors
tcompress -q -d m.safetensors.tkz
cmp m.safetensors orig.safetensors && echo restored
tcompress -q -d -c m.safetensors.tkz | cmp - orig.safetensors && echo stdout
tcompress -q -c m.safetensors | tcompress -q -d | cmp - orig.safetensors && echo piped
tcompress -q -d orig.safetensors; echo "rc=$?"
tcompress -q -c -o x.tkz m.safetensors; echo "rc=$?"
