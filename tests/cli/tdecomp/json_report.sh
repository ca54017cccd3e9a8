# --json - replaces the text report on stdout; each tensor reports fit, iterations, time
# per iteration and the compression ratio (original bytes / factor bytes).
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker x.safetensors
tdecomp tucker x.safetensors --ranks 3,3,3 --json - -o d.safetensors | "$PY" -c "
import json, sys
r = json.load(sys.stdin)
t = r['tensors'][0]
print(r['command'], t['name'], t['method'], t['ranks'], t['factor_dtype'])
print('keys', sorted(k for k in t if k in ('fit', 'rel_error', 'iterations', 'seconds_per_iteration', 'compression_ratio')))
print('ratio', round(t['compression_ratio'], 4), 'bytes', t['bytes_in'], t['bytes_out'])
print('fit > 0.999:', t['fit'] > 0.999)"
