# --json PATH writes the JSON report to a file and keeps the text report on stdout.
tinfo --json report.json "$TD/tiny.safetensors" -t embed.weight | tail -n 1
"$PY" -c "import json; d = json.load(open(\"report.json\")); f = d[\"files\"][0]; print(f[\"format\"], [t[\"name\"] for t in f[\"tensors\"]], f[\"metadata\"][\"format\"])"
