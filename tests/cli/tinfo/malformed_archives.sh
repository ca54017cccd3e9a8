# Every file of the malformed zip corpus (scripts/make-malformed-archives.py): hostile and
# damaged PyTorch checkpoints and .npz archives. tinfo --stats (which reads every tensor)
# exits 3 with exactly one line on stderr, from a path and through a pipe; and nothing in
# a pickle runs (the os.system one would write a file named pwned).
. "$(dirname "${BASH_SOURCE[0]}")/corpus.bash"
check_corpus 29 "$TD"/malformed/pt-* "$TD"/malformed/npz-*
[ -e pwned ] && { echo "a pickle ran a command" >&2; fail=1; }
exit $fail
