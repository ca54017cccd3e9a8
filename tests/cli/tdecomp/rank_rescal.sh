# Rank selection picks the planted rank of a nonnegative RESCAL model; text table.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" rescal r.safetensors
tdecomp rank rescal r.safetensors --range 2:5 --realisations 5 --seed 3 | head -1
