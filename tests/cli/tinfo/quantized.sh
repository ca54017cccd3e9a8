# A file tquant wrote is listed as the tensors it stands for, with each one's scheme,
# stored bytes and bits per value; --parts lists the stored tensors. tinfo diff compares
# it with its source through dequantization: rel_err is the quantization error, --rtol
# bounds it, and bit-equality fails. The same from a pipe.
tquant "$TD/tiny.safetensors" --scheme int8 --min-elements 1 -q -o q.safetensors >/dev/null
tinfo q.safetensors
tinfo --parts q.safetensors | head -1
tinfo diff "$TD/tiny.safetensors" q.safetensors >/dev/null; echo "bit-equal rc=$?"
tinfo diff "$TD/tiny.safetensors" q.safetensors --rtol 0.01 | tail -1; echo "rtol rc=$?"
cat q.safetensors | tinfo diff "$TD/tiny.safetensors" - --rtol 0.01 >/dev/null; echo "pipe rc=$?"
cat q.safetensors | tinfo --stats - -t lm_head.weight | cut -c1-60 | tail -2
tinfo --json - q.safetensors | "$PY" -c "
import json, sys
t = {x['name']: x for x in json.load(sys.stdin)['files'][0]['tensors']}
print(t['lm_head.weight']['scheme'], t['lm_head.weight']['stored'], t['special']['scheme'])"
# tquant dequant writes the tensors tinfo compared.
tquant dequant q.safetensors -q -o d.safetensors
tinfo diff q.safetensors d.safetensors | tail -1
