# Save stall by snapshot mode, save and restore speed, uncompressed and lossless.
tbench ckpt --shape 256x1024 --dir . --params compression=none,lossless --reps 2 --json r.json >/dev/null
$PY "$TK_SRC/tests/cli/tbench/check_results.py" r.json --area ckpt --expect-status ok=4
ls | grep -c tbench-ckpt || true
