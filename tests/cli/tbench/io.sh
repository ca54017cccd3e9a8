# Raw bandwidth and safetensors/HDF5 load speed of the scratch directory, 1 MiB.
tbench io --shape 256x1024 --dir . --reps 2 --json r.json >/dev/null
$PY "$TK_SRC/tests/cli/tbench/check_results.py" r.json --area io --expect-status ok=3
ls | grep -c tbench-io || true
