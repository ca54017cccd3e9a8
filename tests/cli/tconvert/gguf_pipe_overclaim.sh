# A GGUF read from a pipe whose one tensor claims 64 GiB but which sends 64 bytes: the
# claim is larger than the stream delivers, so it is invalid input (exit 3, one line),
# not an allocation failure (exit 5): memory follows the bytes that arrive.
. "$TK_SRC/tests/cli/bounded.bash"
"$PY" - <<'PY'
import struct
out = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
out += struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 1 << 34, 0, 0)  # F32 [2^34]
out += bytes(-len(out) % 32) + bytes(64)
open("claim.gguf", "wb").write(out)
PY
cat claim.gguf | bounded tconvert - -o out.safetensors 2>err
echo "tconvert from a pipe: exit $?, $(wc -l <err) stderr line(s)"
cat claim.gguf | bounded tinfo --stats - >/dev/null 2>err
echo "tinfo --stats from a pipe: exit $?, $(wc -l <err) stderr line(s)"
cat err >&2
