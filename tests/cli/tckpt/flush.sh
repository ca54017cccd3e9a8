# Flush copies committed steps to a durable tier; ls marks them flushed.
tckpt save ck "$TD/tiny.safetensors" -q
tckpt save ck "$TD/tiny.safetensors" -q
tckpt flush ck --to durable
tckpt save ck "$TD/tiny.safetensors" -q
tckpt ls ck --durable durable | awk '{print $1, $(NF-1)}'
tckpt verify durable -q >/dev/null && echo "durable verified"
cat durable/latest
