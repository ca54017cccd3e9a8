# GGUF strings are UTF-8; a tensor name or key that is not (gguf-py refuses the file with
# UnicodeDecodeError) is invalid input: exit 3 with one line showing the name escaped,
# in tconvert (which gave a usage error, exit 2, when the safetensors writer met the
# name) and in tinfo.
. "$TK_SRC/tests/cli/bounded.bash"
"$PY" - <<'PY'
import struct
def s(b): return struct.pack("<Q", len(b)) + b
def gguf(name, key=b"general.name"):
    out = b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + s(key) + struct.pack("<I", 8) + s(b"m")
    out += s(name) + struct.pack("<IQIQ", 1, 4, 0, 0)
    return out + bytes(-len(out) % 32) + bytes(16)
open("name.gguf", "wb").write(gguf(b"w\xff\x1b[2J"))
open("key.gguf", "wb").write(gguf(b"w", key=b"k\xc3"))
PY
for f in name key; do
  bounded tconvert $f.gguf -o out.safetensors 2>err; echo "tconvert $f.gguf: exit $?, $(wc -l <err) stderr line(s)"
  cat err
  bounded tinfo $f.gguf 2>err; echo "tinfo $f.gguf: exit $?"
done
"$PY" -c "
import gguf
for f in ['name.gguf', 'key.gguf']:
    try:
        gguf.GGUFReader(f); print('gguf-py', f, 'reads it')
    except UnicodeDecodeError:
        print('gguf-py', f, 'UnicodeDecodeError')
"
