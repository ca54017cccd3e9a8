# Restoring something that is not a container.
tcompress -d "$TD/tiny.safetensors" -o out.safetensors
