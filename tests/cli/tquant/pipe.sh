# Quantize from stdin to stdout and dequantize through a pipe; the report goes to stderr.
cat "$TD/tiny.safetensors" | tquant - --scheme kmeans:4 --min-elements 1 --allow-nonfinite -o - 2>report.txt | tquant dequant - -o - -q >d.safetensors
grep -c "^lm_head.weight  *kmeans:4" report.txt
"$PY" -c "from safetensors import safe_open; print(sorted(safe_open('d.safetensors', 'np').keys()))"
