# A 466-byte checkpoint whose one-float storage is viewed with stride 0 as 2^27 floats
# (512 MiB): statistics and conversion stream the view a piece at a time, so memory
# stays bounded by a piece although the output is half a gigabyte (once a buffer of the
# view's size: 3 GB at 3 GiB).
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
hostile stride0 s.pt
bounded tinfo --stats s.pt
cat out.txt
BOUNDED_OUT=/dev/null bounded tconvert -q s.pt -o -
