# --version: the tool, the version and the compiled-in features.
v=$(tinfo --version) || exit 1
printf "%s\n" "$v" | sed -n 1p | grep -Eq "^tinfo \(tensorkit\) [0-9]+\.[0-9]+\.[0-9]+$" || exit 10
printf "%s\n" "$v" | sed -n 2p | grep -Eq "^features: hdf5 zstd openmp cuda=(yes|no) mpi=(yes|no)$" || exit 11
[ "$(printf "%s\n" "$v" | wc -l)" -eq 2 ] || exit 12
echo ok
