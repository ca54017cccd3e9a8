# A -t pattern that matches nothing is a usage error, and nothing is written.
tconvert "$TD/tiny.safetensors" -t "layers.*" -t "atn*" -o s.safetensors
rc=$?
[ -e s.safetensors ] && exit 10
exit $rc
