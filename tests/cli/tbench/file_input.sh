# Tensors of a file: only the float ones, selected by -t, named FILE:TENSOR.
$PY -c "
import numpy as np; from safetensors.numpy import save_file
r = np.random.default_rng(1)
save_file({'w': r.standard_normal((32, 64)).astype(np.float32), 'b': r.standard_normal(64).astype(np.float16),
           'ids': np.arange(10, dtype=np.int32)}, 'm.safetensors')"
tbench compress m.safetensors -t w --methods lossless,bitx --reps 1 --json r.json >/dev/null
$PY "$TK_SRC/tests/cli/tbench/check_results.py" r.json --area compress --expect-status ok=2
