# A model-like file without -t: tucker decomposes the tensors of order >= 2 and skips
# the others (one notice; --explain gives every tensor's decision). Skipped tensors are
# not in the output.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" model m.safetensors
tdecomp tucker m.safetensors --tol 1e-3 --explain --json r.json -o d.safetensors >/dev/null 2>err.txt
cat err.txt
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names d.safetensors
"$PY" -c "
import json
for t in json.load(open('r.json'))['tensors']:
    print(t['name'], t['stored'], t['ranks'], 'rel_error <= 1e-3:', t['rel_error'] <= 1e-3)"
tdecomp reconstruct d.safetensors -q -o y.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names y.safetensors
