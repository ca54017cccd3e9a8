# Writing over an input is refused: inputs are read lazily from memory maps. A hard
# link is the same file by device and inode (a symbolic link as the output is refused
# for being one: output_symlink).
cp "$TD/tiny.safetensors" x.safetensors
ln x.safetensors y.safetensors
tconvert x.safetensors -o ./y.safetensors
rc=$?
cmp -s x.safetensors "$TD/tiny.safetensors" || exit 10
exit $rc
