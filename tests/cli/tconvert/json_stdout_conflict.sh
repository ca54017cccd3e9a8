# --json - and -o - cannot share stdout.
tconvert "$TD/tiny.safetensors" -o - --json - > /dev/null
