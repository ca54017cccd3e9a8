# A q4k tensor whose rows (384 values) are not whole Q4_K blocks (256) cannot be
# repacked as ggml blocks: the message says so, rather than that q4k has no ggml type.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'w': np.random.default_rng(1).normal(0, 0.02, (256, 384)).astype(np.float32)}, 'w.safetensors')
"
tquant w.safetensors --scheme q4k -q -o q.safetensors
tconvert q.safetensors -o q.gguf
