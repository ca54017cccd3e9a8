# Entries planted in a checkpoint directory as symbolic links to another directory: a
# leftover-named one is removed as a link by gc, its target untouched; one named like
# a step is refused (exit 3, naming it).
tckpt save ck --step 1 "$TD/tiny.safetensors" -q
mkdir -p victim/step-9 && echo "keep me" >victim/step-9/notes.txt
ln -s ../victim/step-9 ck/step-9.del-1
tckpt gc ck -q && echo "gc: exit 0"
test -e ck/step-9.del-1 || echo "link: removed"
cat victim/step-9/notes.txt
ln -s ../victim/step-9 ck/step-9
tckpt gc ck 2>gc.err
echo "gc: exit $? $(grep -c '^tckpt: error: expected a directory, found a symbolic link (ck/step-9)$' gc.err)"
cat victim/step-9/notes.txt
