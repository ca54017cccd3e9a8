# An .npz of 320 KB whose deflated array holds 320 MiB of zeros: statistics and
# conversion inflate it a piece at a time, so memory stays bounded by a piece, not by
# what the entry claims (once a 320 MiB buffer each).
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
hostile npz-zeros z.npz
bounded tinfo --stats z.npz
cat out.txt
BOUNDED_OUT=/dev/null bounded tconvert -q z.npz -o -
echo "safetensors of $(tconvert -q z.npz -o - | wc -c) bytes"
