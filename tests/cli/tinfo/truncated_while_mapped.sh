# Every tool that maps an input, with that input cut short right after the mapping
# (libtk_truncate_on_map.so): an I/O error naming the file (exit 4), no crash (SIGBUS,
# 135), no output published, within 10 s.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
shim="$TK_BIN/libtk_truncate_on_map.so"
$PY - <<'PY'
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
t = {f"layer{i}.weight": rng.standard_normal((256, 256)).astype(np.float32) for i in range(4)}
save_file(t, "model.safetensors")
save_file({k: v + 1e-3 for k, v in t.items()}, "ft.safetensors")
np.save("x.npy", t["layer0.weight"])
PY
tconvert model.safetensors -o model.gguf
tcompress model.safetensors -o model.tkz
tckpt save ckpt/ --step 1 model.safetensors 2>/dev/null
tcompress store add model.safetensors --store store/ 2>/dev/null
object=$(find store -type f -path '*objects*' -size +8k | head -1)

# check NAME KEEP CMD...: run CMD with NAME cut to KEEP bytes when it is mapped.
check() {
  local name=$1 keep=$2
  shift 2
  cp -p "$name.orig" "$name" 2>/dev/null
  rm -f out.* && rm -rf out.d
  TK_TRUNCATE_NAME="$name" TK_TRUNCATE_TO="$keep" LD_PRELOAD="$shim" timeout 10 "$@" >out.stdout 2>out.stderr
  local rc=$?
  local left=$(ls out.* out.d 2>/dev/null | grep -vc '^out.std')
  if [ "$rc" = 4 ] && grep -q "truncated while it was being read" out.stderr && [ "$left" = 0 ]; then
    echo "$*: exit 4"
  else
    echo "$*: exit $rc, outputs left: $left"; cat out.stderr
  fi
}
for f in model.safetensors ft.safetensors x.npy model.gguf model.tkz; do cp -p "$f" "$f.orig"; done
check model.safetensors 4096 tinfo --stats model.safetensors
check model.safetensors 4096 tconvert model.safetensors -o out.h5
check model.safetensors 4096 tconvert model.safetensors -o out.safetensors
check model.safetensors 4096 tconvert model.safetensors -o -
check model.gguf 8192 tconvert model.gguf -o out.safetensors
check x.npy 4096 tinfo --stats x.npy
check model.safetensors 4096 tcompress model.safetensors -o out.tkz
check model.tkz 4096 tcompress -d model.tkz -o out.safetensors
check model.safetensors 4096 tcompress ft.safetensors --base model.safetensors -o out.tkz
check model.safetensors 4096 tcompress store add model.safetensors --name other --store store/
check model.safetensors 4096 tquant model.safetensors --scheme int8 -o out.safetensors
check model.safetensors 4096 tckpt save ckpt/ --step 2 model.safetensors
ls ckpt | grep -c 'step-0*2$'
check "$object" 4096 tcompress store get model.safetensors --store store/ -o out.safetensors
