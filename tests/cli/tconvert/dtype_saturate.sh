# --saturate clamps what does not fit the target type (f8_e4m3: max 448); without it
# Inf becomes NaN (E4M3 has no infinity) while 2.25 and -1.5 are exact either way.
tconvert -q -t special --dtype f8_e4m3 "$TD/tiny.safetensors" -o plain.safetensors
tconvert -q -t special --dtype f8_e4m3 --saturate "$TD/tiny.safetensors" -o sat.safetensors
tinfo --stats plain.safetensors sat.safetensors
