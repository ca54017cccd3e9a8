# A consumer that stops reading early (head) ends tconvert quietly with status 141
# (128 + SIGPIPE), and no message on stderr.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'big': np.arange(1 << 20, dtype=np.float32)}, 'big.safetensors')
"
tconvert big.safetensors -o - 2> tconvert.err | head -c 100 > /dev/null
echo "status ${PIPESTATUS[0]}"
[ -s tconvert.err ] && cat tconvert.err >&2 && exit 10
exit 0
