# What a container needs or holds, as the library states it, with the flag or tool the
# user gives for it (src/cli/option_hint.h): a tensor of a BitX container read without
# its base, and a tensor asked of a container that keeps a file as opaque bytes.
M="$TK_SRC/tests/cli/tcompress/model.py"
"$PY" "$M" base.safetensors 1
"$PY" "$M" tune.safetensors 1 0.001
tcompress -q tune.safetensors --base base.safetensors -o tune.tkz
tinfo --stats -t ids tune.tkz 2>&1 | sed -E 's/[0-9a-f]{16}\.\.\./HASH.../'; echo "rc=${PIPESTATUS[0]}"
tcompress -q "$TD/field.h5" -o h.tkz
tcompress -d - -t x -o x.safetensors <h.tkz 2>&1; echo "rc=$?"
ls
