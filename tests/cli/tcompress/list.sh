# -l lists each tensor with its codec; the last line sums up the container.
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
tcompress -q m.safetensors -o m.tkz
tcompress -l m.tkz | awk 'NR > 1 && !/^safetensors:/ {print $1, $2, $(NF - 3)}'
tcompress -l m.tkz | tail -1 | cut -d' ' -f1-3
