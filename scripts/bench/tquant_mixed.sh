#!/usr/bin/env bash
# Mixed-precision proof: at the same average bpw, the budgeted allocation (one scheme per
# tensor) against every single scheme, on a seeded synthetic model with varied
# distributions and on the test models. Writes OUTDIR/<model>.json and .svg (bpw vs
# SQNR) and prints the comparison tables.
#
# usage: scripts/bench/tquant_mixed.sh [BUILD_DIR] [OUTDIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
out=${2:-bench-results/tquant_mixed}
py=${TK_PYTHON:-$src/.venv/bin/python}
mkdir -p "$out"
"$py" "$src/scripts/bench/make_quant_model.py" "$out/synthetic.safetensors" --rows 256 --cols 1024 --seed 1
for model in "$out/synthetic.safetensors" "$src/testdata/sharded"; do
  name=$(basename "$model" .safetensors)
  echo "== $name"
  "$build/tquant" curve "$model" --allow-nonfinite --json "$out/$name.json" --svg "$out/$name.svg"
done
