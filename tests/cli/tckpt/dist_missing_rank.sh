# A distributed step whose rank 1 part is gone is refused by verify, naming the rank.
tk_dckpt_fixture ck 4 3
rm ck/step-4/rank-00001.json
tckpt verify ck
