# --help lists the common flags, examples and the exit codes, and the subcommand has its
# own help; no CLI11 artefacts ({false}, validator lists after a ':') show.
tinfo --help > h && grep -q -- "--tensors" h && grep -q -- "--no-progress" h && grep -q "diff" h || exit 10
grep -q "^Examples:" h && grep -q "^  tinfo model.safetensors" h && grep -q "^  3  invalid or corrupt input" h || exit 12
tinfo diff --help > d && grep -q -- "--tolerance" d && grep -q -- "--rtol" d && grep -q -- "--json" d || exit 11
# Each help is read whole from a file: `grep -q` on a pipe may stop reading before the
# tool has written its last lines, which pipefail then counts as the tool's failure.
for t in tinfo tconvert tdecomp tquant tcompress tckpt tbench; do
  $t --help > t.help || exit 15
  grep -q "{false}\|:{" t.help && exit 13
  grep -q "^Exit codes:" t.help || exit 14
done
echo ok
