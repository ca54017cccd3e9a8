# After a cast to bf16 some tensors differ: exit 1 (like cmp). Value-equal tensors of
# another dtype are `close`, which without --tolerance does not pass either.
tconvert -q --dtype bf16 "$TD/tiny.safetensors" -o b.safetensors && tinfo diff "$TD/tiny.safetensors" b.safetensors
