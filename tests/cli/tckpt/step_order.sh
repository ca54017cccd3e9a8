# Steps only increase.
tckpt save ck --step 5 "$TD/tiny.safetensors" -q
tckpt save ck --step 4 "$TD/tiny.safetensors"
