# Integer tensors pass through with a notice; the report lists the quantized tensors.
tquant "$TD/tiny.safetensors" --scheme kmeans:2 --min-elements 1 --allow-nonfinite -o q.safetensors | cut -d' ' -f1 | head -3
tquant dequant q.safetensors -o d.safetensors -q
cmp <("$PY" -c "from safetensors.numpy import load_file; print(load_file('d.safetensors')['position_ids'].tolist())") \
    <("$PY" -c "from safetensors.numpy import load_file; import os; print(load_file(os.environ['TD'] + '/tiny.safetensors')['position_ids'].tolist())")
