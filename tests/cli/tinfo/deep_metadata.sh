# Metadata values holding JSON nested 10^5 levels deep (arrays under 'tk', objects under
# 'obj') are shown as their raw strings (cut to 40 columns here); no crash.
"$PY" - <<'PY'
import numpy as np
from safetensors.numpy import save_file
d = 100000
save_file({"w": np.zeros(2, np.float32)}, "deep.safetensors",
          metadata={"tk": "[" * d + "]" * d, "obj": '{"a":' * d + "0" + "}" * d, "ok": '{"b": [1, 2]}'})
PY
tinfo --metadata deep.safetensors | cut -c1-40
