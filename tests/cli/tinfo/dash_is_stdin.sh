# A bare "-" is standard input (and -o - standard output) even where a file named "-"
# exists: the tools own that convention; the library opens "-" only as a file when a
# path such as ./- names it.
tconvert -q "$TD/field.h5" --format hdf5 -o ./- 2>/dev/null
cat "$TD/tiny.safetensors" | tinfo -
tinfo ./- >listed && head -2 listed
tconvert -q "$TD/tiny.safetensors" -o - | tinfo - >piped && head -2 piped
tinfo ./- >listed && head -2 listed
