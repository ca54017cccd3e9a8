# --explain prints the default keep list and every decision; --dry-run writes nothing.
tquant "$TD/tiny.safetensors" --scheme kmeans:2 --min-elements 1 --rule 'embed.*=kmeans:4' --keep lm_head.weight --explain --dry-run --allow-nonfinite -o never.safetensors 2>&1 >/dev/null | grep -v warning
test ! -e never.safetensors && echo nothing written
