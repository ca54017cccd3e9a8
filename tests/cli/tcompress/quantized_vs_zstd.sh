# Weights quantized at the source and cast to f16 / f32 compress no larger than zstd -3
# on the whole file, give or take the container's fixed bytes (headers, the safetensors
# header kept verbatim, one record header and index entry per tensor, the footer: under
# 600 bytes for two tensors); the estimate on a sample must not keep the byte planes
# where zstd on the raw bytes wins.
"$PY" "$TK_SRC/tests/cli/tcompress/quantized_zstd.py" make q.safetensors
tcompress q.safetensors -q --container -o q.tkz
zstd3=$("$PY" "$TK_SRC/tests/cli/tcompress/quantized_zstd.py" size q.safetensors 3)
tkz=$(stat -c %s q.tkz)
echo "within zstd -3 + 600: $([ "$tkz" -le $((zstd3 + 600)) ] && echo yes || echo "no ($tkz against $zstd3)")"
tcompress -l q.tkz | awk 'NR > 1 && $1 != "safetensors:" {print $1, $(NF - 3)}'
tcompress -d q.tkz -o r.safetensors && cmp q.safetensors r.safetensors && echo "restored exactly"
