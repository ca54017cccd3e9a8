# --device auto (the default) runs a small tensor on the CPU, GPU or not, and the
# report says so: the text table's device column, and --json's device and the reason.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tucker x.safetensors
tdecomp tucker x.safetensors --ranks 3,3,3 -o d1.safetensors | awk 'NR <= 2 { print $NF }'
tdecomp tucker x.safetensors --ranks 3,3,3 --device auto --json - -o d2.safetensors | "$PY" -c "
import json, sys
t = json.load(sys.stdin)['tensors'][0]
print(t['device'], t['device_reason'] != '')"
tdecomp tucker x.safetensors --ranks 3,3,3 --device cpu --json - -o d3.safetensors | "$PY" -c "
import json, sys
t = json.load(sys.stdin)['tensors'][0]
print(t['device'], repr(t['device_reason']))"
