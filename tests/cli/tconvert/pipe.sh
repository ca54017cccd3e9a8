# A pipe through tconvert (stdin to stdout) into tinfo.
cat "$TD/tiny.safetensors" | tconvert -q - -o - | tinfo
