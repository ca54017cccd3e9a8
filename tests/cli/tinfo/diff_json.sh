# tinfo diff --json -: one document, no table.
tconvert -q --dtype f16 -t embed.weight -t position_ids "$TD/tiny.safetensors" -o b.safetensors
tinfo diff --json - -t embed.weight -t position_ids "$TD/tiny.safetensors" b.safetensors | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
print(d[\"match\"], d[\"summary\"])
for t in d[\"tensors\"]:
    print(t[\"name\"], t[\"status\"], t[\"dtype_a\"], t[\"dtype_b\"], t[\"sqnr_db\"] is None, t[\"max_abs_err\"] > 0)
"
