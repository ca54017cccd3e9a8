# 2,000 nested HDF5 groups (a 2 MB file) are refused quickly with exit 3 and one line
# naming the path; 64 levels, the limit, still read. The walk opens each group relative
# to its parent, so the time grows with the number of links, not with depth squared.
"$PY" - <<'PY'
import h5py, numpy as np
for name, depth in (("deep.h5", 2000), ("limit.h5", 64)):
    with h5py.File(name, "w") as f:
        g = f
        for _ in range(depth):
            g = g.create_group("g")
        g["x"] = np.zeros(1, np.float32)
PY
start=$(date +%s%N)
tinfo deep.h5 >out 2>err
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "deep: exit $rc, $(wc -l <err) stderr line(s), stdout $(wc -c <out) bytes"
[ "$ms" -lt 5000 ] && echo "deep: under 5 s" || echo "deep: took $ms ms"
grep -Eq "^tinfo: error: groups nested deeper than 64 levels \(deep\.h5: group '(g/){64}g'\)$" err && echo "deep: names the path"
tinfo limit.h5 | tail -1 | cut -c1-12
