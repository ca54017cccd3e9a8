# A directory that is not a checkpoint directory: exit 3, nothing modified.
mkdir notckpt && echo data > notckpt/notes.txt
tckpt save notckpt "$TD/tiny.safetensors"
