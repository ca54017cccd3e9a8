# tckpt flush copies a distributed step whole (shards, rank parts, manifest), and the
# copy verifies.
tk_dckpt_fixture ck 4 2
tckpt flush ck --to copy -q
tckpt verify copy -q
ls copy/step-4
