# --csv: one row per (cell, metric) with the header of docs/TBENCH.md.
tbench compress --shape 32x64 --methods lossless --reps 2 --csv r.csv >/dev/null
head -1 r.csv
cut -d, -f1-7,11-13 r.csv | tail -n +2
tbench compress --shape 32x64 --methods lossless --reps 1 --csv - | sed -n '1p;$='
