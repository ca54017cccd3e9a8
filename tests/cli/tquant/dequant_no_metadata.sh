# dequant of a file without quantization metadata exits 3.
tquant dequant "$TD/tiny.safetensors" -o d.safetensors
