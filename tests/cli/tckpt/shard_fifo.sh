# A rank's shard replaced by a FIFO: verify reports it, restore and tconvert refuse the
# step with exit 3 naming it, each at once instead of waiting for a writer.
tk_dckpt_fixture ck 4 3
rm ck/step-4/rank-00001.safetensors
mkfifo ck/step-4/rank-00001.safetensors
timeout 5 tckpt verify ck; echo "verify: rc=$?"
timeout 5 tckpt restore ck -o r.safetensors; echo "restore: rc=$?"
timeout 5 tconvert ck/step-4 -o c.safetensors; echo "tconvert: rc=$?"
ls r.safetensors c.safetensors 2>/dev/null || echo "no output"
