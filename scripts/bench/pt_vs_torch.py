"""Reading a PyTorch checkpoint: tconvert pytorch_model.bin -> safetensors against torch.

    .venv/bin/python scripts/bench/pt_vs_torch.py BUILD_DIR [RUNS]

all-MiniLM-L6-v2 (from .venv/models) is saved with torch.save as pytorch_model.bin. Each
run converts it to safetensors with tconvert, and with a fresh Python that runs
torch.load(weights_only=True) and safetensors' save_file, interleaved; a third command,
`python -c "import torch"`, measures what the peer spends before it reads a byte. Prints
the medians and checks that both outputs hold the same tensors (tinfo diff). Needs torch
(`make bench-deps`).
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from safetensors.torch import load_file

build = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
model = os.path.join(os.path.dirname(__file__), "..", "..", ".venv", "models", "all-minilm-l6-v2", "model.safetensors")
tmp = tempfile.mkdtemp()
src = os.path.join(tmp, "pytorch_model.bin")
torch.save(load_file(model), src)
peer = ("import torch; from safetensors.torch import save_file; "
        f"save_file(torch.load({src!r}, weights_only=True), {os.path.join(tmp, 'b.safetensors')!r})")
commands = {
    "tconvert": [os.path.join(build, "tconvert"), "-q", "-f", src, "-o", os.path.join(tmp, "a.safetensors")],
    "torch.load + save_file": [sys.executable, "-c", peer],
    "import torch alone": [sys.executable, "-c", "import torch"],
}
times = {k: [] for k in commands}
for _ in range(runs):
    for name, cmd in commands.items():
        t = time.perf_counter()
        subprocess.run(cmd, check=True)
        times[name].append(time.perf_counter() - t)
subprocess.run([os.path.join(build, "tinfo"), "diff", os.path.join(tmp, "a.safetensors"),
                os.path.join(tmp, "b.safetensors")], check=True, stdout=subprocess.DEVNULL)
print(f"{os.path.getsize(src) / 1e6:.1f} MB pytorch_model.bin, {runs} interleaved runs, medians:")
for name, t in times.items():
    print(f"  {name:24s} {statistics.median(t):.3f} s  (min {min(t):.3f}, max {max(t):.3f})")
