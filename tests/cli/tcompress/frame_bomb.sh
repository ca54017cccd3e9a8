# Decompression bombs in the compact form, each under 10 s and 256 MB of peak RSS:
# - a frame whose header claims 2^40 bytes while its blocks give 16 MiB: refused where
#   the blocks end (exit 3), memory bounded by its 1 MiB window;
# - a single-segment frame claiming 2^40 bytes (its window is its size) and a frame
#   made with a 256 MiB window: refused from the header, before any allocation;
# - a real bomb (320 MiB of zeros in a few KB, and again with zstd's largest default
#   window, 128 MiB): restored in full, to a pipe, in bounded memory.
peak() { timeout 10 "$PY" "$TK_SRC/tests/cli/tcompress/peak_rss.py" 256 "$@"; }
"$PY" "$TK_SRC/tests/cli/tcompress/zstd_craft.py" claim claim.tkz 16
peak tcompress -q -d claim.tkz -o -
peak --stdin claim.tkz tcompress -q -d - -o -
"$PY" "$TK_SRC/tests/cli/tcompress/zstd_craft.py" segment segment.tkz
peak tcompress -q -d segment.tkz -o -
head -c 1M /dev/zero | zstd -q -3 --long=28 -c > window.tkz
peak tcompress -q -d window.tkz -o -
head -c 320M /dev/zero | zstd -q -3 -c > zeros.tkz
head -c 320M /dev/zero | zstd -q -3 --long=27 -c > zeros_long.tkz
[ "$(stat -c %s zeros.tkz)" -lt 20000 ] && echo "bomb under 20 KB"
peak tcompress -q -d zeros.tkz -o -
peak --stdin zeros_long.tkz tcompress -q -d - -o -
tcompress -d claim.tkz -o out.txt 2>&1 | sed 's/: [A-Z].*(/: ... (/'
tcompress -d segment.tkz -o out.txt 2>&1
tcompress -d window.tkz -o out.txt 2>&1
[ -e out.txt ] && echo "out.txt written"
exit 0
