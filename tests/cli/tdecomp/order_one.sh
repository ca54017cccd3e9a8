# A vector named by -t cannot be decomposed (without -t it would be skipped).
"$PY" -c "
import numpy as np
np.save('v.npy', np.arange(5.0))"
tdecomp cp v.npy -t v --rank 2 -o d.safetensors
