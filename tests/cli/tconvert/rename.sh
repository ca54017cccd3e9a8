# --rename with a captured star; the metadata and provenance record the command.
cp "$TD/tiny.safetensors" .
tconvert -q tiny.safetensors --rename "layers.*=blocks.*" --rename "embed.weight=tok.weight" -o r.safetensors && tinfo --metadata r.safetensors
