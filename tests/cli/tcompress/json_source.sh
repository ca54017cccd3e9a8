# A model's config.json is no tensor file: tcompress keeps it whole as one zstd frame
# and says so, and it restores byte for byte; a shard index (it has a weight_map) holds
# no tensors either and is named a file too, not "sharded".
printf '{"architectures": ["BertModel"], "hidden_size": 384, "model_type": "bert"}\n' > config.json
tcompress config.json -o c.tkz 2>&1 | sed 's/, [0-9.]* MB\/s//'
tcompress -q -d c.tkz -o back.json && cmp config.json back.json && echo "restored"
printf '{"metadata": {"total_size": 16}, "weight_map": {"w": "model.safetensors"}}\n' > m.index.json
tcompress m.index.json -o i.tkz 2>&1 | sed 's/, [0-9.]* MB\/s//; s/->.*//'
