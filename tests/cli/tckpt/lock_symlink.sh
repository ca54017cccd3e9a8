# A .lock planted as a symbolic link (or a hard link) to another file: save and gc
# refuse (exit 3, naming it) and never write their pid through it.
tckpt save ck --step 1 "$TD/tiny.safetensors" -q
echo "keep me" >victim.txt
rm ck/.lock && ln -s ../victim.txt ck/.lock
tckpt save ck --step 2 "$TD/tiny.safetensors" 2>save.err
echo "save: exit $? $(grep -c '^tckpt: error: expected a regular file, found a symbolic link (ck/.lock)$' save.err)"
tckpt gc ck 2>gc.err
echo "gc: exit $? $(grep -c '^tckpt: error: expected a regular file, found a symbolic link (ck/.lock)$' gc.err)"
rm ck/.lock && ln victim.txt ck/.lock
tckpt save ck --step 2 "$TD/tiny.safetensors" 2>hard.err
echo "save (hard link): exit $? $(grep -c '^tckpt: error: lock file has 2 links .*(ck/.lock)$' hard.err)"
cat victim.txt
rm ck/.lock
tckpt restore ck -o out.safetensors -q && echo "restore: exit 0"
