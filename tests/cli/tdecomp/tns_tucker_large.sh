# A large sparse tensor is not densified for a dense method.
printf '1 1 1 1.0\n1000 1000 1000 2.0\n' > t.tns
tdecomp tucker t.tns --ranks 2,2,2 -o d.safetensors
