# --help lists the common flags, and the subcommand has its own help.
tinfo --help > h && grep -q -- "--tensors" h && grep -q -- "--no-progress" h && grep -q "diff" h || exit 10
tinfo diff --help > d && grep -q -- "--tolerance" d && grep -q -- "--json" d || exit 11
echo ok
