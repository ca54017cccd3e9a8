# Several files: one block each, separated by a blank line; -t/--exclude select.
cd "$TD" && tinfo -t "*.weight" --exclude "layers.*" tiny.safetensors sharded
