# -t and --exclude select tensors; a -t that matches nothing is an error.
tconvert -q "$TD/tiny.safetensors" -t "layers.*" -t "*_ids" --exclude "*.norm.*" -o s.safetensors && tinfo s.safetensors
