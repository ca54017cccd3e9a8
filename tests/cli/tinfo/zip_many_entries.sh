# A checkpoint of 40000 zip entries and 2 * 10^5 tensors, each of which looks up its
# storage (the last entry): lookups by name are hashed, so listing it takes under a
# second (once a linear search per tensor: over 15 s here, 68 s at 10^6 tensors).
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
hostile many-lookups m.pt
bounded tinfo m.pt
head -1 out.txt
