# One damaged shard (truncated) breaks the layout and every tensor in it: verify still
# says so in one stderr line, the first problem and how many more; -v lists the others,
# one line each; --json has them all.
tckpt save ck --step 1 "$TD/tiny.safetensors" -q
shard=$(ls ck/step-1/*.safetensors | head -1)
truncate -s 100 "$shard"
tckpt verify ck >/dev/null 2>err
rc=$?
echo "verify: exit $rc, $(wc -l <err) stderr line(s)"
tckpt verify ck -v >/dev/null 2>verr
echo "verify -v: $(grep -c '^tckpt: also: ' verr) more lines, $(grep -c '^tckpt: error: ' verr) error line"
n=$(tckpt verify ck --json - 2>/dev/null | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["steps"][0]["problems"]))')
[ "$(grep -c '^tckpt: also: ' verr)" -eq $((n - 1)) ] && echo "json lists all $n problems"
cat err >&2
exit $rc
