# A different base (another seed) is refused before anything is decoded.
M="$TK_SRC/tests/cli/tcompress/model.py"
"$PY" "$M" base.safetensors 1
"$PY" "$M" other.safetensors 2
"$PY" "$M" tune.safetensors 1 0.001
tcompress -q tune.safetensors --base base.safetensors -o tune.tkz
tcompress -d tune.tkz --base other.safetensors -o back.safetensors
rc=$?
[ -e back.safetensors ] && echo "back.safetensors written"
exit $rc
