# A vector cannot be decomposed.
"$PY" -c "
import numpy as np
np.save('v.npy', np.arange(5.0))"
tdecomp cp v.npy --rank 2 -o d.safetensors
