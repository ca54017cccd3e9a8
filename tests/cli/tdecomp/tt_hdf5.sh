# TT with an error bound, written as HDF5 and rebuilt from it; a bf16 reconstruction.
"$PY" "$TK_SRC/tests/cli/tdecomp/gen.py" hilbert h.safetensors
tdecomp tt h.safetensors --tol 1e-6 -q -o d.h5
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" meta d.h5 h method tt_shape
tdecomp reconstruct d.h5 -o y.h5 -q
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" error h.safetensors y.h5 h 1e-6
tdecomp reconstruct d.h5 --dtype bf16 -o b.safetensors -q
"$PY" "$TK_SRC/tests/cli/tdecomp/check.py" names b.safetensors
