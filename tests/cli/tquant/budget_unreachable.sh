# A budget below the cheapest candidates exits 2 and states the smallest reachable bpw.
"$PY" "$TK_SRC/scripts/bench/make_quant_model.py" m.safetensors --rows 32 --cols 128
tquant m.safetensors --budget 1.5 --candidates kmeans:2,int4,int8 -o q.safetensors
