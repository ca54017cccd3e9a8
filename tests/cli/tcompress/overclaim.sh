# A frame whose header claims 4 GiB (2^24 chunks of 256 bytes) but whose chunk table
# holds one entry: the claim is impossible for its length, so it is refused (exit 3, one
# line naming the tensor) before anything is allocated for it, here under a 4 GiB
# address-space limit (an allocation of the claim would exit 5, out of memory; the
# limit leaves room for the thread stacks of a many-core machine). Under AddressSanitizer
# (TK_SANITIZE) no limit is set: ASan reserves terabytes of address space for its shadow.
"$PY" "$TK_SRC/tests/cli/tcompress/tkz_craft.py" overclaim over.tkz
[ -n "${TK_SANITIZE:-}" ] || ulimit -v 4194304
tcompress -l over.tkz >/dev/null 2>list.err; echo "list: $?"
tcompress -d -t w over.tkz -o w.safetensors 2>extract.err; echo "extract: $?"
cat over.tkz | tcompress -d - -o - 2>pipe.err >/dev/null; echo "restore from a pipe: $?"
for f in list extract pipe; do wc -l <$f.err; done
cat list.err extract.err >&2
tcompress -d over.tkz -o out.safetensors
