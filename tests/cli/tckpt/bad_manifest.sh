# A manifest that does not parse, then one whose checksum fails: exit 3 each.
tckpt save ck --step 1 "$TD/tiny.safetensors" -q
echo '{ not json' > ck/step-1/manifest.json
tckpt restore ck -o out.safetensors
echo "restore: $?"
tckpt save ck2 --step 1 "$TD/tiny.safetensors" -q
sed -i 's/"step": 1/"step": 2/' ck2/step-1/manifest.json
tckpt verify ck2
