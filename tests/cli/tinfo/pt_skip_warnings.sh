# A checkpoint whose non-tensor values repeat one reason 10^5 times, and a 4 KiB key
# given 1000 times (a dict keeps a key once, as Python does): one warning line per
# reason, with a count and a few names cut short (once 1.5 GB of stderr from such files).
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
hostile skip-repeats s.pt
bounded tinfo s.pt
echo "$(wc -l <err.txt) warning line(s), $([ "$(stat -c %s err.txt)" -lt 1024 ] && echo under || echo over) 1 KB"
sed -E "s/'n{64}\.\.\.'/'N...'/" err.txt
head -1 out.txt
