# An unknown flag: usage error, exit 2, with a hint.
tinfo --bogus "$TD/tiny.safetensors"
