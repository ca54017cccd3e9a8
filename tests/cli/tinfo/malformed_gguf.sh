# Every file of the malformed GGUF corpus (scripts/make-malformed-gguf.py): tinfo --stats
# exits 3 with exactly one line on stderr, from a path and through a pipe.
. "$(dirname "${BASH_SOURCE[0]}")/corpus.bash"
check_corpus 32 "$TD"/malformed/gguf-*
exit $fail
