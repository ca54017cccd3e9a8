# Within --tolerance the cast tensors are `close` and the comparison passes.
tconvert -q --dtype bf16 "$TD/tiny.safetensors" -o b.safetensors && tinfo diff --tolerance 0.01 "$TD/tiny.safetensors" b.safetensors
