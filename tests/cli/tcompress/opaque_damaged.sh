# Input that looks like a tensor file but does not parse is still kept as opaque bytes
# (and restored exactly), but not silently: one warning line says why, and --strict
# refuses it (exit 3, one line, no output). Ordinary files of no known format and
# sound HDF5 files pass without a word.
"$PY" -c "
import h5py, numpy as np
with h5py.File('ok.h5', 'w') as f: f['a'] = np.arange(4096.0)
b = open('ok.h5', 'rb').read()
open('cut.h5', 'wb').write(b[: len(b) // 2])"
"$PY" "$TK_SRC/tests/cli/tcompress/model.py" m.safetensors
# A safetensors file whose 8-byte header length is garbled (the JSON follows intact).
"$PY" -c "
b = bytearray(open('m.safetensors', 'rb').read()); b[6] = 0x7f
open('bad.safetensors', 'wb').write(b)"
printf 'just some text\n' > notes.txt
for f in cut.h5 bad.safetensors ok.h5 notes.txt; do
  tcompress -q "$f" -o "$f.tkz" 2>err; echo "$f: exit $?, $(wc -l <err) stderr line(s)"
  sed -E 's/[0-9]{3,}/N/g' err
  tcompress -q -d "$f.tkz" -o - | cmp - "$f" && echo "$f: restored exactly"
  tcompress -q --strict "$f" -o "strict.$f.tkz" 2>err; echo "$f --strict: exit $?, $(wc -l <err) stderr line(s)"
  sed -E 's/[0-9]{3,}/N/g' err
done
cat cut.h5 | tcompress -q --strict - -o pipe.tkz 2>&1 | sed -E 's/[0-9]{3,}/N/g'; echo "pipe --strict: exit $?"
ls strict.* | sort
[ -e pipe.tkz ] && echo "pipe.tkz written"; true
