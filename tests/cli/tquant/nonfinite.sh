# A tensor to quantize that holds NaN or Inf stops the run with exit 3 and its name (the
# default rules would keep this 1-D tensor, and then its values do not matter).
tquant "$TD/tiny.safetensors" --scheme fp8_e4m3 --no-default-keep -o q.safetensors
