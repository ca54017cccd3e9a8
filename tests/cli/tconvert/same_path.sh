# Writing over an input is refused: inputs are read lazily from memory maps.
cp "$TD/tiny.safetensors" x.safetensors
ln -s x.safetensors y.safetensors
tconvert x.safetensors -o ./y.safetensors
rc=$?
cmp -s x.safetensors "$TD/tiny.safetensors" || exit 10
exit $rc
