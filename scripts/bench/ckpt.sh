#!/usr/bin/env bash
# Checkpoint benchmark, one run on this machine: `tckpt bench` (save stall, synchronous
# save, flush, restore with verification, incremental bytes, each against the raw disk
# bandwidth of the same directory measured in the same run), then the Python
# safetensors package saving the same state in the same directory.
# Usage: scripts/bench/ckpt.sh [BUILD_DIR] [SIZE] [REPEAT]   (defaults: build 1GiB 5)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$here/build}
size=${2:-1GiB}
repeat=${3:-5}
count=64
py=${PYTHON:-$here/.venv/bin/python}
dir=$(mktemp -d "${TMPDIR:-/tmp}/tk-bench-ckpt.XXXXXX")
trap 'rm -rf "$dir"' EXIT

"$build/tckpt" bench --dir "$dir/tk" --size "$size" --count $count --repeat "$repeat" --json "$dir/tk.json"
bytes=$("$py" -c "import json; print(json.load(open('$dir/tk.json'))['state_bytes'])")
"$py" "$here/scripts/bench/ckpt_safetensors.py" "$dir" "$bytes" $count "$repeat" > "$dir/peer.json"
"$py" - "$dir/tk.json" "$dir/peer.json" <<'PY'
import json, sys
tk, peer = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
gb = tk["state_bytes"] / 1e9
print()
print(f"{'save of the same state':38s} {'seconds':>8s} {'GB/s':>6s}")
for name, s in [("tckpt save_async stall (copy)", tk["stall_copy_s"]),
                ("tckpt synchronous save (fsync)", tk["sync_save_s"]),
                ("safetensors save_file (no fsync)", peer["save_s"]),
                ("safetensors save_file + fsync", peer["save_fsync_s"])]:
    print(f"{name:38s} {s:8.3f} {gb / s:6.2f}")
PY
