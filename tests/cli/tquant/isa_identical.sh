# The output bytes do not depend on the vector path (TK_ISA): every scheme family, the
# decoders (tquant dequant) and a budgeted run give the scalar path's bytes on each path
# the processor runs. The outputs have the same name in two directories: the provenance
# records the name, not the path.
"$PY" "$TK_SRC/scripts/bench/make_quant_model.py" m.safetensors --rows 48 --cols 256
paths=$(tinfo --version | sed -n 's/^kernels: .*(this processor runs: \([a-z0-9 ]*\);.*/\1/p')
[ -n "$paths" ] || exit 10
mkdir -p scalar
for isa in $paths; do mkdir -p "$isa"; done
n=0
for args in "--scheme int8" "--scheme int4" "--scheme int3 --group-size 64 --asym" "--scheme q2k" "--scheme q3k" "--scheme q4k" \
            "--scheme q5k" "--scheme q6k" "--scheme q8k" "--scheme nf4" "--scheme fp8_e4m3" "--scheme mxfp4" \
            "--scheme mxfp6_e2m3" "--scheme nvfp4" "--scheme kmeans:4" "--scheme vq:4:6" "--scheme vq:4:2" "--scheme trellis:2" \
            "--budget 4.5"; do
  for isa in $paths; do
    (cd "$isa" && TK_ISA=$isa tquant ../m.safetensors $args -q -f -o q.safetensors > /dev/null &&
       TK_ISA=$isa tquant dequant q.safetensors -q -f -o d.safetensors > /dev/null) || exit 11
  done
  for isa in $paths; do
    cmp -s scalar/q.safetensors "$isa/q.safetensors" || { echo "quantized bytes differ: $args on $isa"; exit 12; }
    cmp -s scalar/d.safetensors "$isa/d.safetensors" || { echo "dequantized bytes differ: $args on $isa"; exit 13; }
  done
  n=$((n + 1))
done
echo "$n runs: the same bytes on every path"
