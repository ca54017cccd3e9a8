# An existing output is kept unless -f is given: the refusal comes before any reading.
tconvert -q "$TD/tiny.safetensors" -o out.safetensors
cp out.safetensors before.safetensors
tconvert -q "$TD/tiny.safetensors" -o out.safetensors --dtype f16; echo "rc=$?"
cmp out.safetensors before.safetensors && echo kept
tconvert -q -f "$TD/tiny.safetensors" -o out.safetensors --dtype f16; echo "rc=$?"
cmp -s out.safetensors before.safetensors || echo replaced
