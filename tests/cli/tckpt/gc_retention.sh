# Retention keeps the last two and every third step; leftovers of killed writers go.
for s in 1 2 3 4 5 6 7; do tckpt save ck --step $s "$TD/tiny.safetensors" -q; done
mkdir ck/step-8.tmp-1-1-1
tckpt gc ck --keep-last 2 --keep-every 3
ls ck
