tckpt save ck --step 1 "$TD/tiny.safetensors" -q
tckpt restore ck --step 9 -o out.safetensors
