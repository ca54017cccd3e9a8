# --json PATH and --svg FILE replace an earlier report, as a log is, but never a file that
# is not one: a slip such as --json model.safetensors is refused (exit 2) and the model
# kept; a report is replaced.
cp "$TD/tiny.safetensors" m.safetensors
tinfo --stats "$TD/tiny.safetensors" --json m.safetensors > /dev/null; echo "rc $?"
cmp -s m.safetensors "$TD/tiny.safetensors" && echo "m.safetensors kept"
echo '{"old": true}' > r.json
tinfo --stats "$TD/tiny.safetensors" --json r.json > /dev/null; echo "rc $?"
grep -q '"old"' r.json || echo "r.json replaced"
tquant curve "$TD/tiny.safetensors" --candidates int8 --svg m.safetensors > /dev/null 2>&1; echo "svg rc $?"
cmp -s m.safetensors "$TD/tiny.safetensors" && echo "m.safetensors kept"
