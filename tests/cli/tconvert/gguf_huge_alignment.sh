# general.alignment = 2^31 (any power of two is valid GGUF): the padding a file claims is
# bounded by its own bytes. A 57-byte file with no tensors, and one whose only tensor is
# empty (its data offset past the end of the file, as gguf-py reads it), convert to a
# small GGUF (the alignment is not carried past 1 MiB: the writer would pad to 2 GiB) and
# to safetensors, with tconvert and tquant, each in bounded time and memory; gguf-py
# reads the inputs and the outputs alike.
. "$TK_SRC/tests/cli/bounded.bash"
"$PY" - <<'PY'
import struct
def s(b): return struct.pack("<Q", len(b)) + b
def gguf(tensors, alignment=1 << 31):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1)
    out += s(b"general.alignment") + struct.pack("<II", 4, alignment)
    for name, dims in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", 0, 0)  # F32 at offset 0
    return out
open("none.gguf", "wb").write(gguf([]))
open("empty.gguf", "wb").write(gguf([(b"t", [4, 0])]))
PY
for f in none empty; do
  bounded tconvert $f.gguf -q -o $f.out.gguf; echo "tconvert $f.gguf -> gguf: exit $?, $(stat -c %s $f.out.gguf) bytes"
  bounded tconvert $f.gguf -q -o $f.safetensors; echo "tconvert $f.gguf -> safetensors: exit $?"
done
bounded tquant empty.gguf --scheme q4k -o q.gguf >/dev/null; echo "tquant empty.gguf -> gguf: exit $?, $(stat -c %s q.gguf) bytes"
bounded tinfo empty.gguf | tail -1
"$PY" - <<'PY'
import gguf
from safetensors.numpy import load_file
for f in ["none.gguf", "empty.gguf", "none.out.gguf", "empty.out.gguf", "q.gguf"]:
    r = gguf.GGUFReader(f)
    print(f"gguf-py {f}: alignment {r.alignment},", [(t.name, t.data.shape) for t in r.tensors])
print("safetensors empty.safetensors:", {k: v.shape for k, v in load_file("empty.safetensors").items()})
PY
