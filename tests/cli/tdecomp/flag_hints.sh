# The library states what is wrong and names the case; tdecomp adds the flag that decides
# it (src/cli/option_hint.h), as the message or as the innermost location.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
r = np.random.default_rng(0)
save_file({'c': r.standard_normal((8, 8, 8))}, 'cube.safetensors')
save_file({'r': r.standard_normal((6, 6, 3))}, 'rel.safetensors')"
tdecomp cp cube.safetensors --budget 10 -o o.safetensors 2>&1; echo "rc=$?"
tdecomp rank cp cube.safetensors --range 1:3 --realisations 1 2>&1; echo "rc=$?"
tdecomp rank cp cube.safetensors --range 1:3 --noise 2 2>&1; echo "rc=$?"
tdecomp rescal rel.safetensors --rank 2 --nonneg -o o.safetensors 2>&1; echo "rc=$?"
ls
