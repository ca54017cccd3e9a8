# Two inputs are merged; metadata passes through with one provenance entry per run.
cp "$TD/tiny.safetensors" .
tconvert -q tiny.safetensors -t "layers.*" -o part1.safetensors
tconvert -q tiny.safetensors --exclude "layers.*" -o part2.h5
tconvert -q part1.safetensors part2.h5 -o merged.safetensors
tinfo diff tiny.safetensors merged.safetensors | tail -n 1
tinfo --json - merged.safetensors | "$PY" -c "
import json, sys
tk = json.loads(json.load(sys.stdin)[\"files\"][0][\"metadata\"][\"tk\"])
for p in tk[\"provenance\"]: print(p[\"tool\"], p[\"version\"] != \"\", p[\"args\"])
"
