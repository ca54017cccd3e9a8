# --metadata adds the key/value pairs; JSON values on one compact line.
cd "$TD" && tinfo --metadata tiny.safetensors
