# .npy holds one tensor: several are a usage error.
tconvert "$TD/tiny.safetensors" -o all.npy
