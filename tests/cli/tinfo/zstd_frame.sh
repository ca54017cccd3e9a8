# A file tcompress kept as one zstd frame (no tensors in it) is not a tensor file: tinfo
# says what it is and how to restore it, exit 3.
printf '{"hidden_size": 384}\n' > config.json
tcompress -q config.json -o config.json.tkz
tinfo config.json.tkz
