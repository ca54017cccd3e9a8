# A length prefix above the 100 MB header limit is named as such (not "unrecognised").
printf '\x01\xe1\xf5\x05\x00\x00\x00\x00{"a":1}' > big.safetensors
tinfo big.safetensors
