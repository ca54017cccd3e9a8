# --json - replaces the text report with a JSON document.
cd "$TD" && tinfo --json - --stats -t special -t position_ids tiny.safetensors
