# --stats adds min max mean std absmax zeros nan inf (NaN and Inf are counted, not averaged).
cd "$TD" && tinfo --stats tiny.safetensors
