# A compact file whose frame checksum (its last 4 bytes) is wrong: exit 3, one line,
# nothing under the target name.
printf '{"hidden_size": 384, "model_type": "bert", "num_hidden_layers": 6}\n' > config.json
tcompress -q config.json -o c.tkz
"$PY" -c "
b = bytearray(open('c.tkz', 'rb').read()); b[-1] ^= 0x01
open('c.tkz', 'wb').write(b)"
timeout 10 tcompress -d c.tkz -o out.json
