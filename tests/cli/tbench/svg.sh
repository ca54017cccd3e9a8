# --svg: valid XML, a rate-distortion curve per method (three rates each), throughput bars.
tbench quant --shape 32x64 --dist gaussian --methods int8,int4,nf4 --params group_size=32,64 --reps 1 --svg q.svg >/dev/null
tbench compress --shape 32x64 --methods lossless,lossy-quant --params bits=2,4,6 --reps 1 --svg c.svg >/dev/null
$PY - <<'PY'
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
for path in ("q.svg", "c.svg"):
    root = ET.parse(path).getroot()
    series = [g for g in root.iter(ns + "g") if g.get("class") == "series"]
    bars = [g for g in root.iter(ns + "g") if g.get("class") == "group"]
    texts = {t.text for t in root.iter(ns + "text")}
    points = [len(list(g.iter(ns + "circle"))) for g in series]
    print(path, "curves:", " ".join(f"{g.get('data-name')}({n})" for g, n in zip(series, points)),
          "| bar groups:", len(bars), "| labelled:", "bits per value (stored bits / values)" in texts
          and "SQNR (dB, higher is better)" in texts)
PY
