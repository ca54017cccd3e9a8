tckpt save ck --metadata novalue "$TD/tiny.safetensors"
