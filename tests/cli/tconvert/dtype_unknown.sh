# An unknown --dtype is a usage error.
tconvert --dtype f13 "$TD/tiny.safetensors" -o x.safetensors
