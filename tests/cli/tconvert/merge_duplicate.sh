# The same tensor name in two inputs is refused.
tconvert "$TD/tiny.safetensors" "$TD/tiny.safetensors" -t special -o m.safetensors
