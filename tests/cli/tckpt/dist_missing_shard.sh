# Restoring a distributed step whose rank 2 shard is gone fails naming the tensor, the
# slice and its rank; nothing is written.
tk_dckpt_fixture ck 4 3
rm ck/step-4/rank-00002.safetensors
tckpt restore ck -o out.safetensors
rc=$?
test ! -e out.safetensors && exit $rc
