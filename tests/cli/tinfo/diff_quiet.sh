# diff -q, as diff -q does: one line when the files differ (exit 1), nothing when they
# match (exit 0); the table only without -q.
tconvert -q --dtype bf16 "$TD/tiny.safetensors" -o b.safetensors
tinfo diff -q "$TD/tiny.safetensors" "$TD/tiny.safetensors"; echo "rc $?"
tinfo diff -q "$TD/tiny.safetensors" b.safetensors | sed "s|$TD/||"; echo "rc ${PIPESTATUS[0]}"
