# Two frames one after the other (`cat a.zst b.zst`): zstd -d would join them, but a
# compressed file is one frame, so tcompress refuses the second: exit 3, one line.
printf '{"a": 1}\n' > a.json
printf '{"b": 2}\n' > b.json
tcompress -q a.json -o a.tkz
zstd -q -3 b.json -o b.zst
cat a.tkz b.zst > ab.tkz
timeout 10 tcompress -d ab.tkz -o out.json
