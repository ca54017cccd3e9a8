# Tensors missing on either side and shape mismatches.
tconvert -q "$TD/tiny.safetensors" --exclude "lm_head.*" --rename special=extra --rename layers.0.norm.weight=special -o b.safetensors
tinfo diff "$TD/tiny.safetensors" b.safetensors
