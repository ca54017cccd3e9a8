# The messages of the naming rules.
cp "$TD/tiny.safetensors" m.safetensors
tcompress -q -d m.safetensors 2>&1; echo "rc=$?"
tcompress -q -c -o x.tkz m.safetensors 2>&1; echo "rc=$?"
tcompress -q m.safetensors --set-metadata a=b 2>&1; echo "rc=$?"
tcompress -l m.safetensors -c 2>&1; echo "rc=$?"
