# A sharded model in, HDF5 out, and back to safetensors.
tquant "$TD/sharded" --scheme kmeans:3 -q -o q.h5 >/dev/null
tquant dequant q.h5 -o d.safetensors -q
"$PY" -c "from safetensors import safe_open; f = safe_open('d.safetensors', 'np'); print(sorted(f.keys())); print(f.get_tensor('model.layers.1.mlp.weight').dtype)"
