# A container cut short, read from a file and from a pipe: exit 3 either way, and no
# output under the target name.
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
tcompress -q m.safetensors -o m.tkz
head -c $(( $(stat -c %s m.tkz) - 100 )) m.tkz > cut.tkz
tcompress -d cut.tkz -o out.safetensors; echo "file: $?"
cat cut.tkz | tcompress -d - -o out.safetensors; echo "pipe: $?"
head -c 200 m.tkz | tcompress -d - -o out.safetensors; echo "header: $?"
[ -e out.safetensors ] && echo "out.safetensors written"
exit 0
