# A boolean tensor named by -t is not numeric data (without -t it would be skipped).
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'b': np.ones((3, 3), np.bool_)}, 'b.safetensors')"
tdecomp cp b.safetensors -t b --rank 2 -o d.safetensors
