# Flags that do not go together.
tcompress -d -l x.tkz; echo "d+l: $?"
tcompress "$TD/tiny.safetensors" -t x -o a.tkz; echo "t without d: $?"
tcompress "$TD/tiny.safetensors" --crf 20 -o a.tkz; echo "crf without video: $?"
tcompress -d x.tkz -t a -t b -o a.npy; echo "two -t: $?"
exit 0
