# A --rule that matches no tensor is an error, as an unmatched -t is, naming the pattern;
# nothing is written.
tquant "$TD/tiny.safetensors" --scheme int8 --rule 'layers.9.*=int4' -o q.safetensors
rc=$?
[ -e q.safetensors ] && echo "output written"
exit $rc
