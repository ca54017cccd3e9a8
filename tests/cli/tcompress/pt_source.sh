# A PyTorch checkpoint is kept as opaque bytes and named for what it is (once "npz", the
# name of any zip), in the summary and the JSON report, from a file and a pipe; an .npz
# is still an npz.
"$PY" -c "import numpy as np; np.savez('a.npz', x=np.arange(3.0))"
tcompress "$TD/torch/state_dict.pt" -o sd.tkz 2>&1 | sed -E 's/,.*//'
cat "$TD/torch/state_dict.pt" | tcompress -q - -o pipe.tkz --json - | "$PY" -c "import json, sys; print('json source:', json.load(sys.stdin)['source'])"
tcompress a.npz -o a.tkz 2>&1 | sed -E 's/,.*//'
