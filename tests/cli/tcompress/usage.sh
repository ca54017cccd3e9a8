# Flags that do not go together.
tcompress -d -l x.tkz; echo "d+l: $?"
tcompress "$TD/tiny.safetensors" -t x -o a.tkz; echo "t without d: $?"
tcompress "$TD/tiny.safetensors" --crf 20 -o a.tkz; echo "crf without video: $?"
tcompress -d x.tkz --format npy -o a.npy; echo "format without -t: $?"
tcompress "$TD/tiny.safetensors" --lossy quant -o a.tkz; echo "quant without bits: $?"
tcompress "$TD/tiny.safetensors" --video hevc --lossy quant --crf 3 -o a.tkz; echo "video and quant: $?"
exit 0
