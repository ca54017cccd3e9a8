# A tconvert killed by SIGTERM mid-conversion leaves neither the output nor its
# temporary file. The input comes from a FIFO that delivers the header and part of the
# data and then stalls, so the kill always lands while the output is being written.
"$PY" -c "
import numpy as np
from safetensors.numpy import save_file
save_file({'big': np.arange(1 << 20, dtype=np.float32)}, 'big.safetensors')
"
mkfifo in.fifo
(head -c 100000 big.safetensors; exec sleep 60) > in.fifo &
feeder=$!
tconvert in.fifo -o out.safetensors &
pid=$!
for _ in $(seq 200); do
  compgen -G ".out.safetensors.tmp-*" > /dev/null && break
  sleep 0.05
done
compgen -G ".out.safetensors.tmp-*" > /dev/null && echo "temporary file present"
kill -TERM "$pid"
wait "$pid"
echo "status $?"
kill "$feeder" 2> /dev/null
wait "$feeder" 2> /dev/null
compgen -G ".out.safetensors.tmp-*" > /dev/null && echo "temporary file left behind"
[ -e out.safetensors ] && echo "output left behind"
exit 0
