"""Write the PyTorch checkpoints that tests/interop/test_torch_interop.py reads.

Usage: .venv/bin/python scripts/make-testdata-torch.py testdata/torch
(needs torch: `make bench-deps` installs it.)

The interop tests in `make test` do not need torch: they read these files, which torch
itself wrote, and compare them with `expected.safetensors`, which holds every tensor
tensorkit should list, made contiguous, under the name tensorkit gives it. The inputs
are seeded; torch.save records a random serialization id, so a rerun changes the bytes
of the .pt files but not what they hold.
"""

import os
import sys

import torch
from safetensors.torch import save_file

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
expected = {}


def save(name, obj, **kwargs):
    torch.save(obj, os.path.join(out, name), **kwargs)


# A module's state_dict: an OrderedDict with _metadata, as HF's pytorch_model.bin is.
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.fc = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied: one storage under two names


net = Net()
sd = net.state_dict()
save("state_dict.pt", sd)
for k, v in sd.items():
    expected[f"state_dict.{k}"] = v.contiguous()

# Every dtype tensorkit shares with torch, in one plain dict.
dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool, torch.complex64, torch.uint16, torch.uint32, torch.uint64,
          torch.float8_e4m3fn, torch.float8_e5m2]
mixed = {}
for dt in dtypes:
    base = torch.randn(2, 3) * 10
    if dt == torch.bool:
        t = base > 0
    elif dt == torch.complex64:
        t = torch.complex(base, -base)
    elif dt.is_floating_point:
        t = base.to(dt)
    else:
        t = base.abs().to(dt) if dt in (torch.uint8, torch.uint16, torch.uint32, torch.uint64) else base.to(dt)
    mixed[str(dt).removeprefix("torch.")] = t
save("dtypes.pt", mixed)
for k, v in mixed.items():
    expected[f"dtypes.{k}"] = v

# Views: a transpose, a slice with an offset, a stride-0 expansion, and a scalar; plus
# values that are not tensors, and nesting through lists and int keys (an optimizer).
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
views = {"t": base.t(), "slice": base[1:3, 2:5], "expand": torch.tensor([1.0, 2.0]).expand(3, 2),
         "scalar": torch.tensor(7, dtype=torch.int64), "step": 5, "name": "run-1",
         "layers": [torch.ones(2), {"w": torch.zeros(3, dtype=torch.float16)}],
         "state": {0: {"exp_avg": torch.full((2,), 0.5)}}, "param_groups": [{"lr": 0.001, "params": [0, 1]}]}
save("views.pt", views)
expected["views.t"] = base.t().contiguous()
expected["views.slice"] = base[1:3, 2:5].contiguous()
expected["views.expand"] = torch.tensor([1.0, 2.0]).expand(3, 2).contiguous()
expected["views.scalar"] = views["scalar"]
expected["views.layers.0"] = views["layers"][0]
expected["views.layers.1.w"] = views["layers"][1]["w"]
expected["views.state.0.exp_avg"] = views["state"][0]["exp_avg"]

# Pickle protocol 4 (STACK_GLOBAL, MEMOIZE, FRAME) and a tensor saved on its own.
p4 = {"a": torch.randn(3, 2), "b": torch.arange(5)}
save("protocol4.pt", p4, pickle_protocol=4)
expected["protocol4.a"] = p4["a"]
expected["protocol4.b"] = p4["b"]
lone = torch.randn(2, 2, dtype=torch.float64)
save("lone.pt", lone)
expected["lone.lone"] = lone

# Refused: a whole module (its class is a global to call) and the legacy format.
save("module.pt", torch.nn.Linear(2, 2))
save("legacy.pt", {"w": torch.ones(2)}, _use_new_zipfile_serialization=False)

save_file({k: v.contiguous().clone() for k, v in expected.items()}, os.path.join(out, "expected.safetensors"))
print(f"wrote {len(os.listdir(out))} files to {out} (torch {torch.__version__})")
