# Tucker and TT of tall modes (an extent above the product of the others): the subspace
# comes from the small side's Gram matrix, so the error stays within the tolerance and
# memory stays near the tensor's (the long side's Gram matrix of the 3000 x 40 matrix
# alone was 72 MB, and its eigensolver took seconds).
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" tall x.safetensors
# The tool's peak resident size beyond that of `tdecomp --version` (its libraries), MB.
extra_peak() {
  "$PY" - "$@" <<'PY'
import resource, subprocess, sys
def peak(args):
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(subprocess.run([sys.executable, "-c", code] + args, check=True, capture_output=True, text=True).stdout)
print((peak(sys.argv[1:]) - peak(["tdecomp", "--version"])) // 1024)
PY
}
for m in tucker tt; do
  mb=$(extra_peak timeout 10 tdecomp $m x.safetensors --tol 1e-2 -j 2 -q -o $m.safetensors)
  echo "$m: peak beyond the libraries under 32 MB: $([ "$mb" -lt 32 ] && echo yes || echo "no ($mb MB)")"
  tdecomp reconstruct $m.safetensors -q -f -o y.safetensors
  for name in a b c d; do "$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error x.safetensors y.safetensors $name 1e-2; done
done
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" meta tucker.safetensors b ranks
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" meta tucker.safetensors c ranks
tdecomp tucker x.safetensors -t a --ranks 10,10 --method hooi -q -o h.safetensors
tdecomp reconstruct h.safetensors -q -o z.safetensors
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error x.safetensors z.safetensors a 2e-2
