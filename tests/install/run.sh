#!/usr/bin/env bash
# The installed tree, used from outside: install the build tree into a scratch prefix,
# run an installed tool, build tests/install/consumer against the prefix through
# find_package(tensorkit) and its C program once more through pkg-config tkckpt, and run
# them. Fails on the first step that does not work.
# Usage: run.sh CMAKE BUILD_DIR WORK_DIR LIBDIR CC CXX  (LIBDIR: CMAKE_INSTALL_LIBDIR)
set -euo pipefail
cmake=$1 build=$2 work=$3 libdir=$4 cc=$5 cxx=$6
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix=$work/prefix

# logged NAME COMMAND...: run COMMAND with its output in WORK/NAME.log, shown if it fails.
logged() {
  local name=$1
  shift
  if ! "$@" >"$work/$name.log" 2>&1; then
    cat "$work/$name.log"
    echo "install test: $name failed: $*" >&2
    exit 1
  fi
}

rm -rf "$work"
mkdir -p "$work"
logged install "$cmake" --install "$build" --prefix "$prefix"

# The installed headers are the public surface only: none internal (by name or by its
# "Internal to" line), none of the CUDA layer (a CPU-only build has none to offer, a CUDA
# build keeps them inside), and no type of CUDA, MPI, HDF5 or nlohmann/json in any.
inc=$prefix/include
(
  cd "$inc"
  find . -type f \( -ipath '*cuda*' -o -ipath '*internal*' \)
  grep -rlzP 'Internal(\s|//|\*)+to\b' . || true
  grep -rlE '#[[:space:]]*include[[:space:]]*[<"](mpi\.h|hdf5\.h|H5[A-Za-z]*\.h|nlohmann/|cuda|cublas|cusolver)' . || true
  grep -rlE '\b(MPI_Comm|MPI_Datatype|hid_t|herr_t|cudaStream_t|cudaError_t)\b|nlohmann::' . || true
) | sort -u >"$work/unwanted-headers"
[ ! -s "$work/unwanted-headers" ] ||
  { echo "install test: headers that must not be installed:" $(cat "$work/unwanted-headers") >&2; exit 1; }
[ -f "$inc/tk/core/tensor.h" ] && [ -f "$inc/tk_ckpt.h" ] || { echo "install test: public headers missing" >&2; exit 1; }

# Nothing installed may point back into the build or source tree.
leaks=$(grep -rlF -e "$build" -e "$(cd "$here/../.." && pwd)" "$prefix/$libdir/cmake" "$prefix/$libdir/pkgconfig" || true)
for f in "$prefix"/bin/* "$prefix/$libdir"/libtkckpt.so; do
  if readelf -d "$f" | grep -qF "$build"; then leaks+=" $f (run path)"; fi
done
[ -z "$leaks" ] || { echo "install test: build paths in $leaks" >&2; exit 1; }

"$prefix/bin/tinfo" --version | tee "$work/tinfo.out"
grep -q '^tinfo (tensorkit) [0-9]' "$work/tinfo.out"

# Man pages and completions from --help: one of each per tool, and the bash completion
# offers the options of the subcommand on the line.
share=$prefix/share
for t in tinfo tconvert tdecomp tquant tcompress tckpt tbench; do
  for f in "$share/man/man1/$t.1" "$share/bash-completion/completions/$t" "$share/fish/vendor_completions.d/$t.fish"; do
    [ -s "$f" ] || { echo "install test: $f missing" >&2; exit 1; }
  done
  grep -q "^\.TH ${t^^} 1" "$share/man/man1/$t.1" || { echo "install test: $t.1 is not a man page" >&2; exit 1; }
done
grep -q '^#compdef tinfo' "$share/zsh/vendor-completions/_tensorkit"
got=$(bash -c 'source "$1"; COMP_WORDS=(tdecomp cp --ra); COMP_CWORD=2; _tk_tdecomp; echo "${COMPREPLY[*]}"' _ \
  "$share/bash-completion/completions/tdecomp")
[ "$got" = "--rank" ] || { echo "install test: bash completion of 'tdecomp cp --ra' gave '$got'" >&2; exit 1; }
got=$(bash -c 'source "$1"; COMP_WORDS=(tcompress --min); COMP_CWORD=1; _tk_tcompress; echo "${COMPREPLY[*]}"' _ \
  "$share/bash-completion/completions/tcompress")
[ "$got" = "--min-sqnr" ] || { echo "install test: bash completion of 'tcompress --min' gave '$got'" >&2; exit 1; }
# One level deeper, and the values of options that take a known set, not file names.
bash_offers() {  # TOOL WORD...: what the bash completion offers for the last word
  local tool=$1
  shift
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tk_'"$tool"'; echo "${COMPREPLY[*]}"' _ \
    "$share/bash-completion/completions/$tool" "$tool" "$@"
}
expect_offer() {  # WHAT GOT WANT: WANT among the words of GOT
  grep -qw -- "$3" <<<"$2" || { echo "install test: $1 offers '$2', not $3" >&2; exit 1; }
}
expect_offer "bash 'tcompress store '" "$(bash_offers tcompress store '')" add
[ "$(bash_offers tcompress store add --st)" = "--store" ] || { echo "install test: bash 'store add --st'" >&2; exit 1; }
expect_offer "bash 'tquant --scheme '" "$(bash_offers tquant --scheme '')" q4k
[ "$(bash_offers tquant --format g)" = "gguf" ] || { echo "install test: bash 'tquant --format g'" >&2; exit 1; }
[ "$(bash_offers tconvert --dtype bf)" = "bf16" ] || { echo "install test: bash 'tconvert --dtype bf'" >&2; exit 1; }
grep -q '^\.SH "TCOMPRESS STORE ADD"' "$share/man/man1/tcompress.1" &&
  sed -n '/^\.SH "TCOMPRESS STORE ADD"/,/^\.SH/p' "$share/man/man1/tcompress.1" | grep -q 'store' ||
  { echo "install test: man tcompress lacks 'store add' and its options" >&2; exit 1; }

# fish and zsh: fish's own `complete -C` on the installed file; zsh's completion body run
# with compadd recording what it offers (compsys then keeps the words matching PREFIX).
fish_dir=$share/fish/vendor_completions.d
got=$(fish --no-config -c 'source $argv[1]; complete -C "tdecomp cp --ra"' "$fish_dir/tdecomp.fish" | cut -f1)
[ "$got" = "--rank" ] || { echo "install test: fish completion of 'tdecomp cp --ra' gave '$got'" >&2; exit 1; }
got=$(fish --no-config -c 'source $argv[1]; complete -C "tdecomp tu"' "$fish_dir/tdecomp.fish" | cut -f1)
[ "$got" = "tucker" ] || { echo "install test: fish completion of 'tdecomp tu' gave '$got'" >&2; exit 1; }
zsh_file=$share/zsh/vendor-completions/_tensorkit
zsh -n "$zsh_file" || { echo "install test: $zsh_file is not zsh" >&2; exit 1; }
zsh_offers() {  # SERVICE CURRENT PREFIX [WORDS]: the words the completion offers there
  zsh -fc 'compadd() { shift; print -rl -- "$@"; }; _files() { print -r -- "(files)"; }
    service=$2; CURRENT=$3; PREFIX=$4; words=(${=5}); source "$1"' _ "$zsh_file" "$@"
}
# (captured first: grep -q would close the pipe early, and pipefail would fail on that)
got=$(zsh_offers tcompress 2 --m)
grep -qx -- --min-sqnr <<<"$got" || { echo "install test: zsh offers no --min-sqnr" >&2; exit 1; }
got=$(zsh_offers tdecomp 2 t)
grep -qx tucker <<<"$got" || { echo "install test: zsh offers no tdecomp tucker" >&2; exit 1; }
[ "$(zsh_offers tinfo 3 x)" = "(files)" ] || { echo "install test: zsh completes no files for tinfo" >&2; exit 1; }
got=$(zsh_offers tcompress 3 '' 'tcompress store')
grep -qx add <<<"$got" || { echo "install test: zsh offers no 'tcompress store add'" >&2; exit 1; }
got=$(zsh_offers tcompress 4 --st 'tcompress store add --st')
grep -qx -- --store <<<"$got" || { echo "install test: zsh offers no 'store add --store'" >&2; exit 1; }
got=$(zsh_offers tquant 3 '' 'tquant --scheme')
grep -qx q4k <<<"$got" || { echo "install test: zsh offers no 'tquant --scheme q4k'" >&2; exit 1; }
got=$(fish --no-config -c 'source $argv[1]; complete -C "tcompress store a"' "$fish_dir/tcompress.fish" | cut -f1)
[ "$got" = "add" ] || { echo "install test: fish completion of 'tcompress store a' gave '$got'" >&2; exit 1; }
got=$(fish --no-config -c 'source $argv[1]; complete -C "tconvert --dtype bf"' "$fish_dir/tconvert.fish" | cut -f1)
[ "$got" = "bf16" ] || { echo "install test: fish completion of 'tconvert --dtype bf' gave '$got'" >&2; exit 1; }

logged configure "$cmake" -S "$here/consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx"
found=$(sed -n 's/^tensorkit_DIR:PATH=//p' "$work/consumer/CMakeCache.txt")
[ "$found" = "$prefix/$libdir/cmake/tensorkit" ] || { echo "install test: found tensorkit in $found" >&2; exit 1; }
logged build "$cmake" --build "$work/consumer" -j2

"$work/consumer/ckpt_c" "$work/ckpt-cmake"
"$work/consumer/tensor_cxx" "$work"
if [ -x "$work/consumer/ckpt_fortran" ]; then
  "$work/consumer/ckpt_fortran" "$work/ckpt-cmake"
fi

# pkg-config sees only this prefix's tkckpt.pc.
(
  unset PKG_CONFIG_PATH
  export PKG_CONFIG_LIBDIR=$prefix/$libdir/pkgconfig
  read -r -a cflags <<<"$(pkg-config --cflags tkckpt)"
  read -r -a libs <<<"$(pkg-config --libs tkckpt)"
  "$cc" -std=c99 -Wall -Werror -pedantic-errors "${cflags[@]}" "$here/consumer/ckpt_c.c" \
    -o "$work/ckpt_c_pc" "${libs[@]}" -Wl,-rpath,"$(pkg-config --variable=libdir tkckpt)"
)
"$work/ckpt_c_pc" "$work/ckpt-pc"
