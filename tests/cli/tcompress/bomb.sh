# A decompression bomb: a container of under 1 KB that restores a 320 MiB tensor
# (64 MiB chunks of constant byte planes, valid in every checksum). Restoring it whole
# (-d) or the tensor alone (-d -t), from a file or a pipe, to a pipe keeps the peak RSS
# under 256 MB: memory is bounded by a chunk, not by the tensor. (By hand, the same
# container at 4 GiB: see docs/TKZ.md.)
"$PY" "$TK_SRC/tests/cli/tcompress/tkz_craft.py" bomb bomb.tkz 320
[ "$(stat -c %s bomb.tkz)" -lt 1024 ] && echo "container under 1 KB"
peak() { "$PY" "$TK_SRC/tests/cli/tcompress/peak_rss.py" 256 "$@"; }
peak tcompress -q -d bomb.tkz -o -
peak --stdin bomb.tkz tcompress -q -d - -o -
peak tcompress -q -d -t w bomb.tkz -o -
peak --stdin bomb.tkz tcompress -q -d -t w - -o -
# The bytes are right: the restored file's SHA-256 is checked against the footer's.
tcompress -d bomb.tkz -o - 2>&1 >/dev/null | grep -o "SHA-256 verified"
