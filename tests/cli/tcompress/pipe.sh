# stdin to stdout both ways: compress into a pipe, restore from it.
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
cat m.safetensors | tcompress -q - -o - | tcompress -q -d - -o - | cmp - m.safetensors && echo "pipe identical"
# A container on stdin is listed by scanning it.
tcompress -q m.safetensors -o m.tkz
cat m.tkz | tcompress -l --json - | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
print(d['source'], len(d['records']), d['original_bytes'] == $(stat -c %s m.safetensors))"
