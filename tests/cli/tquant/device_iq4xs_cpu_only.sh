# iq4xs has no GPU path: named under --device cuda it exits 5, naming it where a GPU is
# there (without one the missing device is said first), and writes nothing. Under cpu it
# runs.
tquant "$TD/tiny.safetensors" --scheme iq4xs --device cpu -o a.safetensors >/dev/null || exit 11
tquant "$TD/tiny.safetensors" --scheme iq4xs --device cuda:0 -o b.safetensors >/dev/null
rc=$?
[ ! -e b.safetensors ] || exit 12
exit $rc
