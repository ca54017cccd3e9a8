# tquant curve: at each single scheme's bits per weight the budget is never worse than
# that scheme alone, no budget point is above its bpw, and the chart is an SVG.
"$PY" "$TK_SRC/scripts/bench/make_quant_model.py" m.safetensors --rows 32 --cols 128
tquant curve m.safetensors --candidates int4,int8,q4k,kmeans:3 --json c.json --svg c.svg -q >/dev/null
"$PY" - <<'PY'
import json
c = json.load(open("c.json"))
print("singles", sorted(p["label"] for p in c["single"]))
print("never worse", all(r["budget_sqnr_db"] >= r["single_sqnr_db"] - 1e-9 for r in c["comparison"]))
print("within", all(r["budget_bpw"] <= r["bpw"] + 1e-9 for r in c["comparison"]))
print("budget points rise", all(a["sqnr_db"] <= b["sqnr_db"] + 1e-9 for a, b in zip(c["budget"], c["budget"][1:])))
print("svg", open("c.svg").read().lstrip().startswith("<svg") or "<svg" in open("c.svg").read()[:200])
PY
