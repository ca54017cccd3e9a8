# A container of a future version is named as such.
tcompress -q --container "$TD/tiny.safetensors" -o t.tkz
printf '\x03' | dd of=t.tkz bs=1 seek=3 conv=notrunc status=none
tcompress -d t.tkz -o out.safetensors
