# A tensor holding NaN or Inf stops the run with exit 3 and its name.
tquant "$TD/tiny.safetensors" --scheme int4 -o q.safetensors
