#!/usr/bin/env bash
# Submit array_compress.sbatch with one task per shard of MODEL, then array_merge.sbatch
# to run once every task has succeeded; print both job ids ("ARRAY_ID MERGE_ID").
#
#   submit_array.sh MODEL OUT compress|quant [tool options]
#
# TK_MAX_PARALLEL caps the tasks running at once (--array=1-N%M). Any other sbatch option
# can be given through sbatch's environment variables (SBATCH_PARTITION, SBATCH_ACCOUNT,
# SBATCH_TIMELIMIT, ...), which apply to both jobs.
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 MODEL OUT compress|quant [OPTIONS]" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
model=$1 out=$2 mode=$3
shift 3
case $mode in compress | quant) ;; *) echo "$0: unknown mode '$mode' (compress or quant)" >&2; exit 2 ;; esac

[ -d "$model" ] || { echo "$0: no such directory: $model" >&2; exit 3; }
mkdir -p "$out"
# Absolute paths: the jobs run in OUT (--chdir), so that their logs land there.
model=$(cd "$model" && pwd) out=$(cd "$out" && pwd)
shopt -s nullglob
shards=("$model"/*-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].safetensors)
count=${#shards[@]}
[ "$count" -gt 0 ] || { echo "$0: no shards *-0000K-of-0000N.safetensors in $model" >&2; exit 3; }
range=1-$count
[ -n "${TK_MAX_PARALLEL:-}" ] && range=$range%$TK_MAX_PARALLEL

array_id=$(sbatch --parsable --array="$range" --chdir="$out" \
  "$here/array_compress.sbatch" "$model" "$out" "$mode" "$@")
array_id=${array_id%%;*}
merge_id=$(sbatch --parsable --dependency=afterok:"$array_id" --kill-on-invalid-dep=yes --chdir="$out" \
  "$here/array_merge.sbatch" "$model" "$out" "$mode")
merge_id=${merge_id%%;*}
echo "$array_id $merge_id"
