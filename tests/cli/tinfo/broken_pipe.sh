# Text output that is still buffered when the reader has gone (`| true`, `| head`)
# ends the tool quietly with status 141 (128 + SIGPIPE), as a large output does
# (tconvert/broken_pipe): the broken pipe surfaces only at the final flush here. The
# input arrives a second late, so that the reader has exited before anything is written.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'w': np.zeros(4, dtype=np.float32)}, 'small.safetensors')
"
tinfo - < <(sleep 1; cat small.safetensors) 2> tinfo.err | true
echo "status ${PIPESTATUS[0]}"
[ -s tinfo.err ] && cat tinfo.err >&2 && exit 10
exit 0
