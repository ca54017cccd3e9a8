# Lossy modes report each tensor's error, and --min-sqnr sets a floor: at 3 bits per
# value HEVC codes the Gaussian matrix at ~12.3 dB and the heavy-tailed one at ~14.9; with
# a floor of 13 the first falls back to --lossy quant at the bits per value HEVC reached,
# which clears it. Under quant, a tensor below the floor is stored exactly.
$PY -c "
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(0)
w = rng.normal(0, 0.02, (256, 256)).astype(np.float32)
save_file({'w': w, 'spiky': rng.standard_t(1.5, (256, 256)).astype(np.float32), 'b': w[0].copy()}, 'm.safetensors')"
show() { $PY -c "
import json, sys
for t in json.load(sys.stdin)['lossy']:
    q = t['sqnr_db']
    print(t['name'], t['method'], 'fell back' if t['fell_back'] else 'kept',
          'exact' if q is None else 'sqnr>=13' if q >= 13 else 'sqnr<13')"; }
tcompress -q m.safetensors --video hevc --bits-per-value 3 -o v.tkz --json - | show
echo "with --min-sqnr 13:"
tcompress -q m.safetensors --video hevc --bits-per-value 3 --min-sqnr 13 -o v13.tkz --json - | show
tcompress -l v13.tkz --json - | $PY -c "
import json, sys
print({r['name']: r['codec'] for r in json.load(sys.stdin)['records']})"
echo "quant at 2 bits, floor 30:"
tcompress -q m.safetensors --lossy quant --bits-per-value 2 --min-sqnr 30 -o q.tkz --json - | show
tcompress -d q.tkz -o back.safetensors && cmp back.safetensors m.safetensors && echo "restored exactly"
tcompress m.safetensors --min-sqnr 10 -o x.tkz 2>&1; echo "rc=$?"
