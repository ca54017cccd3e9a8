# An index beyond the declared shape.
printf '1 1 1 1.0\n2 5 2 2.0\n' > t.tns
tdecomp cp t.tns --rank 2 --shape 2,4,2 -o d.safetensors
