#!/usr/bin/env bash
# tensorkit demo: the main job of each tool on the data shipped in testdata/, printing
# each command and what it did. Usage: scripts/demo.sh [BUILD_DIR]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
export PATH="$build:$PATH"
cd "$root"
work=$(mktemp -d "${TMPDIR:-/tmp}/tensorkit-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
W='$WORK'  # how the scratch directory is shown

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "${*//$work/$W}"; }
run() { show "$@"; "$@"; }
# Run a pipeline given as one string (shown as typed).
pipe() { show "$1"; bash -o pipefail -c "$1"; }

step "1. tinfo: what is in a small model (tensors, dtypes, shapes, metadata)"
run tinfo testdata/tiny.safetensors --metadata

step "2. tinfo --stats: min/max/mean/std/absmax and NaN/Inf counts in one parallel pass"
run tinfo --stats testdata/tiny.safetensors

step "3. tconvert: safetensors -> HDF5 (zstd-compressed chunks) -> safetensors, bit for bit"
run tconvert testdata/tiny.safetensors -o "$work/tiny.h5" --compress zstd
run tconvert "$work/tiny.h5" -o "$work/back.safetensors"
run tinfo diff testdata/tiny.safetensors "$work/back.safetensors"

step "4. Pipes: cast to bf16 on the fly and compare with the original"
pipe "cat testdata/tiny.safetensors | tconvert - --dtype bf16 -o - | tinfo -"
set +e
pipe "tconvert testdata/tiny.safetensors --dtype bf16 -o - | tinfo diff testdata/tiny.safetensors -"
echo "(exit $? : bf16 rounding makes the float tensors differ; tinfo diff exits 1 like cmp)"
set -e

step "5. An HDF5 simulation field: inspect, then export one dataset to NumPy"
run tinfo --stats testdata/field.h5
first=$(tinfo --json - testdata/field.h5 | python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["tensors"][0]["name"])')
run tconvert testdata/field.h5 -t "$first" -o "$work/field.npy"
run tinfo "$work/field.npy"

step "6. Sharded model: the index opens as one file; merge the shards"
run tinfo testdata/sharded
run tconvert testdata/sharded -o "$work/merged.safetensors"
run tinfo "$work/merged.safetensors"

step "7. tdecomp: Tucker with a guaranteed error bound, piped into reconstruct"
pipe "tdecomp tucker testdata/field.h5 -t 'fields/*' --tol 1e-2 -o - | tdecomp reconstruct - -o $work/approx.h5"
run tinfo "$work/approx.h5"
run tdecomp cp testdata/field.h5 -t fields/temperature --rank 4 -o "$work/cp.safetensors"
run tinfo "$work/cp.safetensors"

step "8. tquant: one scheme, then a 4.5-bit budget with a scheme chosen per tensor"
run "$root/.venv/bin/python" scripts/bench/make_quant_model.py "$work/model.safetensors" --rows 64 --cols 512
run tquant "$work/model.safetensors" --scheme q4k -o "$work/q4k.safetensors"
run tquant "$work/model.safetensors" --budget 4.5 -o "$work/mixed.safetensors"
run tquant dequant "$work/mixed.safetensors" -o "$work/dense.safetensors"
run tinfo "$work/dense.safetensors"

step "9. tcompress: lossless round trip, byte for byte"
run tcompress "$work/model.safetensors" -o "$work/model.tkz"
run tcompress -l "$work/model.tkz"
run tcompress -d "$work/model.tkz" -o "$work/model-back.safetensors"
run cmp "$work/model.safetensors" "$work/model-back.safetensors"

step "10. tckpt: two committed steps, the second incremental; restore and verify"
run tckpt save "$work/ckpt" --step 1 "$work/model.safetensors"
run tckpt save "$work/ckpt" --step 2 --incremental "$work/model.safetensors"
run tckpt ls "$work/ckpt"
run tckpt verify "$work/ckpt"
run tckpt restore "$work/ckpt" -o "$work/restored.safetensors"
run cmp "$work/model.safetensors" "$work/restored.safetensors"

step "11. tbench: quantization schemes on a seeded synthetic matrix; compare two runs"
run tbench quant --methods int4,q4k,nf4,mxfp4 --reps 1 --json "$work/bench.json"
run tbench compare "$work/bench.json" "$work/bench.json"

printf '\ndemo: all steps succeeded\n'
