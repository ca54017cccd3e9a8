#!/usr/bin/env bash
# Seconds per file: `tquant --size` at the bytes of each llama-quantize recipe against
# llama-quantize itself, interleaved (A, B, A, B), medians of the rounds.
#
#   scripts/bench/tquant_seconds.sh [--rounds N] [--old TQUANT_BEFORE] [--recipes 'Q2_K Q4_K_M']
#       LLAMA_QUANTIZE TQUANT WORKDIR...
#
# WORKDIR is a work directory of scripts/bench/tquant_llm_ppl.py: f16.gguf,
# imatrix-n24.gguf and llama-RECIPE[-imat].gguf, the files llama-quantize made there
# (their bytes are the --size; -imat ones run both tools with the imatrix). With --old,
# a second tquant runs in the same rounds and each line says whether its file is
# byte-identical to TQUANT's (both with --no-provenance). Both tools at 2 threads.
# Prints one line per file: model, recipe, imatrix, then "wall cpu" medians in seconds.
set -euo pipefail
rounds=3 old="" recipes=""
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --recipes) recipes=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -ge 3 ]] || { sed -n 2,13p "$0" >&2; exit 2; }
lq=$1 tq=$2; shift 2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# "wall cpu" of one run, from GNU time's "%e %U %S".
timed() {
  /usr/bin/time -f '%e %U %S' -o "$scratch/time" "$@" >/dev/null 2>"$scratch/err" || {
    echo "failed: $* ($(tail -1 "$scratch/err"))" >&2; return 1; }
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$scratch/time"
}
# The median of "wall cpu" lines, each column on its own.
median() {
  local n; n=$(printf '%s\n' "$@" | wc -l)
  local w c
  w=$(printf '%s\n' "$@" | awk '{print $1}' | sort -g | sed -n "$(( (n + 1) / 2 ))p")
  c=$(printf '%s\n' "$@" | awk '{print $2}' | sort -g | sed -n "$(( (n + 1) / 2 ))p")
  echo "$w $c"
}

for dir in "$@"; do
  for ref in "$dir"/llama-*.gguf; do
    tag=$(basename "$ref" .gguf); tag=${tag#llama-}
    recipe=${tag%-imat}
    [[ -z $recipes || " $recipes " == *" $recipe "* ]] || continue
    lq_imat=() tq_imat=() imat=no
    if [[ $tag == *-imat ]]; then
      lq_imat=(--imatrix "$dir/imatrix-n24.gguf") tq_imat=(--importance "$dir/imatrix-n24.gguf") imat=yes
    fi
    bytes=$(stat -c %s "$ref")
    L=() T=() O=()
    for ((k = 0; k < rounds; ++k)); do
      L+=("$(timed "$lq" "${lq_imat[@]}" "$dir/f16.gguf" "$scratch/lq.gguf" "$recipe" 2)")
      T+=("$(timed "$tq" "$dir/f16.gguf" --size "$bytes" -o "$scratch/tq.gguf" -f -j 2 -q --no-provenance "${tq_imat[@]}")")
      if [[ -n $old ]]; then
        O+=("$(timed "$old" "$dir/f16.gguf" --size "$bytes" -o "$scratch/old.gguf" -f -j 2 -q --no-provenance "${tq_imat[@]}")")
      fi
    done
    line="$(basename "$dir") $recipe imatrix=$imat llama-quantize $(median "${L[@]}") tquant $(median "${T[@]}")"
    if [[ -n $old ]]; then
      same=differs; cmp -s "$scratch/tq.gguf" "$scratch/old.gguf" && same=byte-identical
      line+=" old $(median "${O[@]}") $same"
    fi
    echo "$line"
  done
done
