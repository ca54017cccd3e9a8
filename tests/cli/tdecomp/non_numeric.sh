# A boolean tensor is not numeric data.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'b': np.ones((3, 3), np.bool_)}, 'b.safetensors')"
tdecomp cp b.safetensors --rank 2 -o d.safetensors
