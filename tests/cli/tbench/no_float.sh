# A file without float tensors cannot be benchmarked: exit 3 naming the file.
$PY -c "
import numpy as np; from safetensors.numpy import save_file
save_file({'ids': np.arange(10, dtype=np.int32)}, 'ints.safetensors')"
tbench quant ints.safetensors
