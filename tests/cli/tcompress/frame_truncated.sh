# A compact file (one zstd frame) cut short, from a file and from a pipe, and cut inside
# its frame header: exit 3 with one line, and nothing under the target name.
"$PY" -c "open('config.json', 'w').write('{\"hidden_size\": 384, \"model_type\": \"bert\"}' * 40)"
tcompress -q config.json -o c.tkz
head -c $(( $(stat -c %s c.tkz) - 6 )) c.tkz > cut.tkz
timeout 10 tcompress -d cut.tkz -o out.json 2>&1; echo "file: $?"
cat cut.tkz | timeout 10 tcompress -d - -o out.json 2>&1; echo "pipe: $?"
head -c 5 c.tkz > head.tkz
timeout 10 tcompress -d head.tkz -o out.json 2>&1; echo "header: $?"
[ -e out.json ] && echo "out.json written"
exit 0
