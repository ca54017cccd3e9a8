# --dtype casts float tensors only (I64 is kept); tinfo diff then shows close/differ, exit 1.
tconvert -q --dtype bf16 "$TD/tiny.safetensors" -o b.safetensors && tinfo b.safetensors && tinfo diff "$TD/tiny.safetensors" b.safetensors
