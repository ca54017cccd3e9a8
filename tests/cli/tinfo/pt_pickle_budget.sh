# Pickles that build far more than they hold are refused within a budget proportional
# to the pickle (exit 3, one line), in bounded memory and time: 1.5 Mi empty lists
# (a 2 KB file once took ~400 MB), a 1 MiB key memoised and used by 200 tensors (once
# 1 GB and exit 0), and 10^6 references to one tensor (once 411 MB).
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
for c in opcode-bomb memo-name memo-refs; do
  echo "$c:"
  hostile $c $c.pt
  [ "$(stat -c %s $c.pt)" -lt 4096 ] && echo "file under 4 KB"
  bounded tinfo --stats $c.pt
  one_error_line tinfo
  grep -o "malformed pickle: it builds more than [0-9]* MiB of objects" err.txt | sed 's/[0-9][0-9]*/N/'
done
