# A container whose footer claims one byte more than its records restore (every
# checksum right): listing it and extracting its tensor refuse it as restoring does
# (exit 3, one line naming the container, or the tensor extracted), from a file or a pipe.
"$PY" "$TK_SRC/tests/cli/tcompress/tkz_craft.py" footer f.tkz
tcompress -l f.tkz 2>&1; echo "list file: $?"
cat f.tkz | tcompress -l - 2>&1; echo "list pipe: $?"
tcompress -d -t w f.tkz -o w.safetensors 2>&1; echo "extract file: $?"
cat f.tkz | tcompress -d -t w - -o w.safetensors 2>&1; echo "extract pipe: $?"
tcompress -d f.tkz -o f.safetensors 2>&1; echo "restore: $?"
for f in w.safetensors f.safetensors; do [ -e "$f" ] && echo "$f written"; done; true
