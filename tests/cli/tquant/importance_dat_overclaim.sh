# Legacy llama.cpp imatrix files (.dat) whose counts claim far more than the file holds
# (2^31-1 entries; an entry of 2^31-1 values; a 2 GiB name) are refused with exit 3 and
# one line before anything is allocated for the claim: measured peak memory under 256 MB
# and time under 10 s.
"$PY" - <<'PY'
import struct
import numpy as np
from safetensors.numpy import save_file
save_file({"w": np.ones((8, 64), np.float32)}, "m.safetensors")
open("entries.dat", "wb").write(struct.pack("<iiciif", 0x7fffffff, 1, b"w", 1, 1, 1.0))
open("values.dat", "wb").write(struct.pack("<iiciif", 1, 1, b"w", 1, 0x7fffffff, 1.0))
open("name.dat", "wb").write(struct.pack("<ii", 1, 0x7fffffff) + b"w" * 64)
PY
for f in entries values name; do
  timeout 10 /usr/bin/time -f %M -o "$f.rss" tquant m.safetensors --scheme int8 --importance "$f.dat" -o q.safetensors 2>"$f.err"
  echo "$f: exit $?, $(wc -l <"$f.err") line(s), under 256 MB: $([ "$(tail -n 1 "$f.rss")" -lt 262144 ] && echo yes || echo no)"
  cat "$f.err"
done
[ ! -e q.safetensors ] && echo "no output"
