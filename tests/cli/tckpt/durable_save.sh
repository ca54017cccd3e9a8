# --durable commits each step to the second tier too, before save returns.
tckpt save ck --durable tier2 "$TD/tiny.safetensors" -q
tckpt save ck --durable tier2 --compress lossless "$TD/tiny.safetensors" -q
tckpt ls ck --durable tier2 | awk '{print $1, $(NF-1)}'
tckpt restore tier2 -o out.safetensors -q && cmp out.safetensors "$TD/tiny.safetensors" && echo identical
