tckpt save ck --step 1 "$TD/tiny.safetensors" -q
rm ck/step-1/shard-00000.safetensors
tckpt restore ck -o out.safetensors
