# --importance is a file: it is sniffed for llama.cpp's legacy .dat, then opened again,
# which standard input cannot be. "-" is refused as a usage error before any work.
tquant "$TD/tiny.safetensors" --scheme q4k --importance - -o out.safetensors < "$TD/tiny.safetensors"
