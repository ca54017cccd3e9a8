# A .tns line that does not parse is named by its number.
printf '1 1 1 1.0\n2 2 2 2.0\n3 x 3 3.0\n' > t.tns
tdecomp cp t.tns --rank 2 -o d.safetensors
