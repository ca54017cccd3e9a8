# A different file under a name already in the store is refused without --replace; the
# same file again is a quiet re-add, and the stored file is unchanged by the refusal.
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
tcompress store add --store S "$TD/tiny.safetensors" --name w.safetensors -q
tcompress store add --store S "$TD/tiny.safetensors" --name w.safetensors -q; echo "same file: rc=$?"
tcompress store add --store S m.safetensors --name w.safetensors -q; echo "different file: rc=$?"
tcompress store get --store S w.safetensors -q | cmp - "$TD/tiny.safetensors" && echo "kept"
tcompress store add --store S m.safetensors --name w.safetensors --replace -q; echo "--replace: rc=$?"
tcompress store get --store S w.safetensors -q | cmp - m.safetensors && echo "replaced"
