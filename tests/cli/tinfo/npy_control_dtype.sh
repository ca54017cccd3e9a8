# A .npy header whose dtype holds control bytes: the message shows them escaped once
# (\x01), never raw and never escaped twice (\\x01).
"$PY" -c "
import struct
h = b\"{'descr': '\x01\xff', 'fortran_order': False, 'shape': (2,), }\"
h += b' ' * (63 - len(h) % 64) + b'\n'
open('bad.npy', 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h + bytes(8))"
tinfo bad.npy
