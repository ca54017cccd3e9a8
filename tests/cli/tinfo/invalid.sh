# A file that is not a tensor file: invalid input, exit 3.
printf "hello, world\n" > notes.txt
tinfo notes.txt
