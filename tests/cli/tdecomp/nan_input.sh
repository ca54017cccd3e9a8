# A NaN in the data is named with its position.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
x = np.ones((3, 4), np.float32); x[1, 2] = np.nan
save_file({'x': x}, 'x.safetensors')"
tdecomp tucker x.safetensors --ranks 1,1 -o d.safetensors
