# The output bytes do not depend on the thread count (codebook, vector and budget modes).
# The count comes from OMP_NUM_THREADS and the outputs have the same name in two
# directories: -j and the name are recorded in the provenance.
"$PY" "$TK_SRC/scripts/bench/make_quant_model.py" m.safetensors --rows 32 --cols 128
mkdir -p one three
for args in "--scheme kmeans:3 --outliers 0.5%" "--scheme vq:4:6" "--budget 3.5 --candidates kmeans:2,kmeans:4,vq:2:4,int4,int8"; do
  (cd one && OMP_NUM_THREADS=1 tquant ../m.safetensors $args -q -o q.safetensors >/dev/null)
  (cd three && OMP_NUM_THREADS=3 tquant ../m.safetensors $args -q -o q.safetensors >/dev/null)
  cmp one/q.safetensors three/q.safetensors && echo same
done
