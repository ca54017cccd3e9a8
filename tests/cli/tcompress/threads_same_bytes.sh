# The container's bytes do not depend on the thread count: small tensors are coded a
# batch at a time, one per thread, and written in input order; a tensor of 8 MiB or more
# is coded alone, its chunks in parallel. Every run restores the input bit for bit.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(7)
t = {f'layer.{i:03d}': (rng.standard_normal(int(rng.integers(1, 40000))) * 0.02).astype(np.float16)
     for i in range(300)}
t['big'] = rng.standard_normal(3 << 20).astype(np.float32)
t['ids'] = rng.integers(0, 50, 5000).astype(np.int64)
save_file(t, 'm.safetensors')"
for j in 1 2 3; do tcompress -q -j $j m.safetensors -o m$j.tkz; done
cmp m1.tkz m2.tkz && cmp m1.tkz m3.tkz && echo "same bytes at -j 1, 2, 3"
tcompress -q -d -j 2 m2.tkz -o back.safetensors && cmp back.safetensors m.safetensors && echo "restored"
tinfo m2.tkz | tail -1 | cut -d, -f1
