# A malformed .tns on standard input: the error names the line of the pipe.
printf '# header\n1 1 1 1.0\n2 2 2 2.0\n3 3 3.0\n' | tdecomp cp - --rank 2 -o d.safetensors
