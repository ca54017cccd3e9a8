#!/usr/bin/env bash
# I/O benchmark: load, statistics, cast and pipe throughput of tensorkit on a seeded
# float32 safetensors file, side by side with safetensors.numpy.load_file in the same run.
#
#   scripts/bench/io.sh [SIZE_MIB]        (default 1024: 16 tensors of 64 MiB)
#
# Environment: TK_BIN (build directory holding tinfo, tconvert and bench/tk_bench_io;
# default ./build), TK_PYTHON (Python with numpy and safetensors; default .venv/bin/python),
# REPS (rounds, default 5), TMPDIR (where the file is written; needs about 2.6x SIZE_MIB).
# Every measurement runs once per round, the rounds alternate the tools, and the report
# gives medians over rounds. The page cache is warmed first, so this measures memory and
# CPU, not the disk. Prints the machine and a Markdown table; exits non-zero when a step
# fails.
set -euo pipefail

size_mib=${1:-1024}
[[ $size_mib =~ ^[1-9][0-9]*$ ]] || { echo "io.sh: error: SIZE_MIB must be a positive integer" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${TK_BIN:-$root/build}
py=${TK_PYTHON:-$root/.venv/bin/python}
reps=${REPS:-5}
peer="$root/scripts/bench/io_peer.py"
for tool in "$bin/tinfo" "$bin/tconvert" "$bin/bench/tk_bench_io"; do
  [[ -x $tool ]] || { echo "io.sh: error: $tool not found (build it, or set TK_BIN)" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file="$work/bench.safetensors"
log="$work/results.jsonl"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
# record CASE SECONDS [RSS_KIB]
record() { printf '{"case": "%s", "seconds": %s, "rss_kib": %s}\n' "$1" "$2" "${3:-null}" >> "$log"; }

# Peak RSS of tconvert inside the pipe: GNU time when installed, else polling VmHWM.
have_gnu_time=0
if [[ -x /usr/bin/time ]] && /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then have_gnu_time=1; fi

pipe_round() {
  local t0 t1 out_bytes rss
  t0=$(now)
  if (( have_gnu_time )); then
    out_bytes=$(cat "$file" | /usr/bin/time -f %M -o "$work/rss" "$bin/tconvert" -q - -o - | wc -c)
    rss=$(tail -n 1 "$work/rss")
  else
    # Approximate: the last sample before tconvert exits.
    "$bin/tconvert" -q - -o - < "$file" > "$work/pipe.out" &
    local pid=$! hwm
    rss=0
    while hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null); [[ -n $hwm ]]; do
      rss=$hwm
      sleep 0.02
    done
    wait "$pid"
    out_bytes=$(wc -c < "$work/pipe.out")
    rm -f "$work/pipe.out"
  fi
  t1=$(now)
  (( out_bytes >= file_bytes )) || { echo "io.sh: error: pipe produced $out_bytes bytes from $file_bytes" >&2; exit 1; }
  record pipe "$(elapsed "$t0" "$t1")" "$rss"
}

echo "generating ${size_mib} MiB of seeded float32 tensors..." >&2
"$py" "$peer" generate "$file" "$size_mib" --tensors 16 --seed 0
file_bytes=$(stat -c %s "$file")
cat "$file" > /dev/null; cat "$file" > /dev/null  # warm the page cache
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

for ((r = 1; r <= reps; ++r)); do
  echo "round $r/$reps" >&2
  machine_flag=$([[ $r == 1 ]] && echo --machine || true)
  "$bin/bench/tk_bench_io" "$file" --reps 1 --warmup 1 $machine_flag >> "$log"
  "$py" "$peer" load "$file" --reps 1 --warmup 1 >> "$log"

  t0=$(now); "$bin/tinfo" --stats "$file" > /dev/null; t1=$(now)
  record tinfo_stats "$(elapsed "$t0" "$t1")"

  t0=$(now); "$bin/tconvert" -q -f "$file" -o "$work/out.safetensors" --dtype bf16; t1=$(now)
  out_bytes=$(stat -c %s "$work/out.safetensors")
  (( out_bytes * 2 >= file_bytes - 4096 )) || { echo "io.sh: error: bf16 output too small" >&2; exit 1; }
  rm -f "$work/out.safetensors"
  record tconvert_bf16 "$(elapsed "$t0" "$t1")"

  # The cast alone, without the file system: output to /dev/null.
  t0=$(now); "$bin/tconvert" -q "$file" -o /dev/null --dtype bf16; t1=$(now)
  record tconvert_bf16_null "$(elapsed "$t0" "$t1")"

  # Peers for what the file system and pipes allow: cp of the file, and cat | cat.
  t0=$(now); cp "$file" "$work/copy.safetensors"; t1=$(now)
  rm -f "$work/copy.safetensors"
  record peer_cp "$(elapsed "$t0" "$t1")"
  t0=$(now); cat "$file" | cat | wc -c > /dev/null; t1=$(now)
  record peer_cat_pipe "$(elapsed "$t0" "$t1")"

  pipe_round
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"$py" - "$log" "$file_bytes" "$have_gnu_time" "$file" "$load_before" "$load_after" <<'PY'
import json, math, statistics, sys
from safetensors import safe_open

log, file_bytes, gnu_time, path = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
load_before, load_after = sys.argv[5], sys.argv[6]
machine, runs = None, {}
for line in open(log):
    rec = json.loads(line)
    if "machine" in rec:
        machine = rec["machine"]
        continue
    secs = rec.get("median_s", rec.get("seconds"))
    runs.setdefault(rec["case"], []).append((secs, rec.get("bytes", file_bytes), rec.get("rss_kib")))
with safe_open(path, "np") as f:
    largest = max(math.prod(f.get_slice(k).get_shape()) * 4 for k in f.keys())  # float32
    count = len(list(f.keys()))

def med(case):
    return statistics.median(s for s, _, _ in runs[case])

def gbs(case):
    return runs[case][0][1] / med(case) / 1e9

mib = 1 << 20
print("## Machine\n")
print(f"- CPU: {machine['cpu_model']}, {machine['logical_cpus']} logical CPUs ({machine['usable_cpus']} usable), "
      f"OpenMP threads: {machine['threads']}")
print(f"- Memory: {machine['memory_bytes'] / (1 << 30):.1f} GiB; kernel: {machine['kernel']}; compiler: {machine['compiler']}")
print(f"- File: {file_bytes / mib:.0f} MiB, {count} float32 tensors, largest {largest / mib:.0f} MiB; "
      f"{len(runs['load_copy'])} alternating rounds, medians; page cache warm")
print(f"- Load average (1, 5, 15 min) before: {load_before}; after: {load_after}\n")
peer = med("peer_load_file")
rows = [
    ("load all tensors, copy (tk_bench_io load_copy)", "load_copy", f"{peer / med('load_copy'):.2f}x the peer"),
    ("load all tensors, mmap + touch pages (tk_bench_io load_mmap)", "load_mmap", f"{peer / med('load_mmap'):.2f}x the peer"),
    ("peer: safetensors.numpy.load_file", "peer_load_file", "1.00x"),
    ("tensor_stats over all tensors, in process (tk_bench_io stats)", "stats", ""),
    ("`tinfo --stats FILE > /dev/null` (wall)", "tinfo_stats", "target >= 2 GB/s: " + ("met" if gbs("tinfo_stats") >= 2 else "missed")),
    ("`tconvert FILE -o OUT.safetensors --dtype bf16` (wall, input bytes)", "tconvert_bf16", ""),
    ("`tconvert FILE -o /dev/null --dtype bf16` (wall, input bytes; no file system)", "tconvert_bf16_null", ""),
    ("peer: `cp FILE COPY` (file-system write of the same bytes)", "peer_cp", ""),
    ("`cat FILE \\| tconvert - -o - \\| wc -c` (wall)", "pipe", "target >= 1 GB/s: " + ("met" if gbs("pipe") >= 1 else "missed")
     + f"; {med('peer_cat_pipe') / med('pipe'):.2f}x the cat peer"),
    ("peer: `cat FILE \\| cat \\| wc -c` (the same pipe with no work in the middle)", "peer_cat_pipe", ""),
]
print("| measurement | median s | GB/s | note |")
print("|---|---:|---:|---|")
for label, case, note in rows:
    print(f"| {label} | {med(case):.3f} | {gbs(case):.2f} | {note} |")
rss = statistics.median(r for _, _, r in runs["pipe"]) * 1024
how = "GNU time %M" if gnu_time else "VmHWM sampled every 20 ms (approximate)"
print(f"| peak RSS of tconvert in the pipe ({how}) | | | {rss / mib:.0f} MiB = "
      f"{rss / largest:.2f}x the largest tensor, {rss / file_bytes:.2f}x the file |")
PY
