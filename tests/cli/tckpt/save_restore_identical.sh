# A model saved as a step and restored comes back byte for byte (same header, same
# metadata, same data), and the step's shard is itself that safetensors file.
tckpt save ck --step 3 "$TD/tiny.safetensors" -q
tckpt restore ck -o out.safetensors -q
cmp out.safetensors "$TD/tiny.safetensors" && echo "restored identical"
cmp ck/step-3/shard-00000.safetensors "$TD/tiny.safetensors" && echo "shard identical"
cat ck/latest
