# zstd's spellings: -19 is --level 19 (the last level wins), -T2 is -j 2, --ultra is
# accepted; zstd flags with no meaning here are refused (exit 2) naming what to use instead.
tcompress -q --level 19 "$TD/tiny.safetensors" -o a.tkz
tcompress -q -3 --ultra -19 -T2 "$TD/tiny.safetensors" -o b.tkz && cmp a.tkz b.tkz && echo "-19 is --level 19"
tcompress --min-sqnr -5 --lossy quant "$TD/tiny.safetensors" -o c.tkz 2>/dev/null; echo "a value is not a level: $?"
for args in "-t a.tkz" "--rm a.tkz" "--fast=3 a.tkz" "--long a.tkz" "-D dict a.tkz"; do
  tcompress $args 2>&1 | sed 's/^/  /'; echo "$args: ${PIPESTATUS[0]}"
done
