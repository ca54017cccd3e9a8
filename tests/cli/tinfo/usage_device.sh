# --device is validated.
tinfo --device tpu "$TD/tiny.safetensors"
