# --rtol bounds the relative error ||A - B|| / ||A|| (the rel_err column): a bf16 cast is
# within 0.5% and passes, not within 0.1% (exit 1); with --tolerance too, both must hold.
tconvert -q --dtype bf16 "$TD/tiny.safetensors" -o b.safetensors
tinfo diff --rtol 0.005 "$TD/tiny.safetensors" b.safetensors | tail -1; echo "rtol 0.005: rc=$?"
tinfo diff --rtol 0.001 "$TD/tiny.safetensors" b.safetensors | tail -1; echo "rtol 0.001: rc=$?"
tinfo diff --rtol 0.005 --tolerance 0.005 "$TD/tiny.safetensors" b.safetensors | tail -1; echo "both: rc=$?"
tinfo diff --rtol 0.005 --json - "$TD/tiny.safetensors" b.safetensors | $PY -c "
import json, sys
d = json.load(sys.stdin)
print('rtol', d['rtol'], 'tolerance', d['tolerance'])"
