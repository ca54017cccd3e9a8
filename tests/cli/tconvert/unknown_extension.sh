# An output name whose extension no writer knows is refused before anything is written;
# --format names the format instead, and a device (/dev/null) is written as safetensors.
tconvert "$TD/tiny.safetensors" -o model.bin; echo "rc=$?"
ls -1 | grep -v '^std'
tconvert -q "$TD/tiny.safetensors" -o model.bin --format safetensors; echo "rc=$?"
tconvert -q "$TD/tiny.safetensors" -o /dev/null; echo "rc=$?"
tinfo model.bin | head -1
