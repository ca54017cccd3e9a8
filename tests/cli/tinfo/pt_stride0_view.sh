# A 466-byte checkpoint whose one-float storage is viewed with stride 0 as 2^28 floats
# (1 GiB): statistics and conversion stream the view a piece at a time, so memory stays
# bounded although the output is a gigabyte (once a 1 GiB buffer, 3 GB at 3 GiB).
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
hostile stride0 s.pt
bounded tinfo --stats s.pt
cat out.txt
BOUNDED_OUT=/dev/null bounded tconvert -q s.pt -o -
