# tcompress runs on a GPU only to encode --video (NVENC). --device cuda says what is
# missing first (here: the device, or CUDA in this build), exit 5; the lossless modes
# under --device cuda are refused even where a GPU is present.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'w': np.random.default_rng(0).standard_normal((128, 512)).astype(np.float32)}, 'a.safetensors')"
tcompress a.safetensors --video hevc --crf 20 -o v.tkz --device cuda 2>err1
echo "video: $?"
grep -Eq '^tcompress: error: (no CUDA device \(.*\)|CUDA support not compiled in) \(--device cuda\)$' err1 || cat err1
tcompress a.safetensors -o l.tkz --device cuda:0 2>err2
echo "lossless: $?"
grep -Eq '^tcompress: error: (no CUDA device \(.*\)|CUDA support not compiled in|tcompress runs on the GPU only to encode --video; --device cpu or auto runs the rest) \(--device cuda:0\)$' err2 || cat err2
tcompress a.safetensors --video hevc --crf 20 -o auto.tkz --json j.json -q
"$PY" -c "
import json; d = json.load(open('j.json')); print(d['lossy_device'] in ('cpu', 'cuda:0'), d['lossy_encoder'] in ('libx265', 'hevc_nvenc'))"
