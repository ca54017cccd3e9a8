# A zstd frame that needs a dictionary (id 7 in its header), and one without a
# checksum, which nothing would verify: each refused before decoding, exit 3, one line.
"$PY" "$TK_SRC/tests/cli/tcompress/zstd_craft.py" dictionary d.tkz
timeout 10 tcompress -d d.tkz -o out.txt; echo "dictionary: $?"
printf 'hello\n' > h.txt
zstd -q -3 --no-check h.txt -o n.tkz
timeout 10 tcompress -d n.tkz -o out.txt; echo "no checksum: $?"
[ -e out.txt ] && echo "out.txt written"
exit 0
