# A zip is read as a PyTorch checkpoint or an .npz by all of its entries: an .npz with
# an extra entry named like a checkpoint's pickle (once read as a checkpoint of 0
# tensors, exit 0), and a zip with neither arrays nor a pickle, are refused (exit 3,
# one line); an .npz and a checkpoint still read.
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
for c in npz-with-pickle zip-neither; do
  hostile $c $c.npz
  bounded tinfo $c.npz
  one_error_line tinfo
  sed -E 's/^tinfo: error: //; s/ \([^(]*\)$//' err.txt
done
"$PY" -c "import numpy as np; np.savez('ok.npz', x=np.arange(3.0))"
tinfo ok.npz | head -1
tinfo "$TD/torch/state_dict.pt" | head -1 | sed 's|.*/||'
