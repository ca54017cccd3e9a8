# A step whose manifest nests 10^5 levels deep: ls lists every step, that one as
# invalid, and exits 3; verify fails that step only. One error line each, no crash.
tckpt save ck --step 1 "$TD/tiny.safetensors" -q
tckpt save ck --step 2 "$TD/tiny.safetensors" -q
"$PY" -c "open('ck/step-1/manifest.json', 'w').write('[' * 100000 + ']' * 100000)"
tckpt ls ck 2>err | awk '{print $1, $(NF-1)}'
echo "ls: ${PIPESTATUS[0]}, $(wc -l <err) stderr line"
cat err >&2
tckpt verify ck 2>err
echo "verify: $?, $(wc -l <err) stderr line"
cat err >&2
