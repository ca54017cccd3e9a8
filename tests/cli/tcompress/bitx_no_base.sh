# A BitX container restored without its base: exit 3, nothing written under the name.
M="$TK_SRC/tests/cli/tcompress/model.py"
"$PY" "$M" base.safetensors 1
"$PY" "$M" tune.safetensors 1 0.001
tcompress -q tune.safetensors --base base.safetensors -o tune.tkz
tcompress -d tune.tkz -o back.safetensors
rc=$?
ls *.safetensors *.tkz
exit $rc
