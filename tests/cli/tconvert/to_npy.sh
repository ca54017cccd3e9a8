# One tensor to .npy, read back by numpy and compared with the safetensors reference.
tconvert -q -t embed.weight "$TD/tiny.safetensors" -o e.npy && tinfo e.npy
"$PY" -c "
import numpy as np
from safetensors import safe_open
a = np.load(\"e.npy\"); b = safe_open(\"$TD/tiny.safetensors\", \"np\").get_tensor(\"embed.weight\")
print(a.dtype, a.shape, a.tobytes() == b.tobytes())
"
