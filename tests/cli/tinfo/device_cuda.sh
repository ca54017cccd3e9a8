# A tool with no GPU code refuses --device cuda (exit 5) rather than run on the CPU; the
# missing device is said first where there is none.
tinfo --device cuda:0 "$TD/tiny.safetensors"
