# --version: the tool, the version, the compiled-in features and the kernels in use.
v=$(tinfo --version) || exit 1
printf "%s\n" "$v" | sed -n 1p | grep -Eq "^tinfo \(tensorkit\) [0-9]+\.[0-9]+\.[0-9]+$" || exit 10
printf "%s\n" "$v" | sed -n 2p | grep -Eq "^features: hdf5 zstd openmp cuda=(yes|no) mpi=(yes|no)$" || exit 11
# mpi=yes exactly in an MPI build (which builds the example mpi_train beside the tools).
want_mpi=no
[ -x "$TK_BIN/mpi_train" ] && want_mpi=yes
printf "%s\n" "$v" | sed -n 2p | grep -q " mpi=$want_mpi$" || exit 17
printf "%s\n" "$v" | sed -n 3p | grep -Eq "^kernels: (scalar|avx2) \(this processor runs: scalar( avx2)?; TK_ISA chooses\) blas: openmp$" || exit 13
[ "$(printf "%s\n" "$v" | wc -l)" -eq 3 ] || exit 12
# TK_ISA forces a path; an unknown one is a usage error (exit 2) naming the known paths.
TK_ISA=scalar tinfo --version | sed -n 3p | grep -q "^kernels: scalar " || exit 14
TK_ISA=sse9 tinfo --version > /dev/null 2> err.txt
[ $? -eq 2 ] || exit 15
grep -q "unknown instruction set 'sse9' (known: scalar, avx2)" err.txt || exit 16
echo ok
