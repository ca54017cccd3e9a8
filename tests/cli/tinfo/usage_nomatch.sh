# A -t pattern that matches nothing is an error, so a typo is not silent.
tinfo -t "embed.weight" -t "lm_haed.*" "$TD/tiny.safetensors"
