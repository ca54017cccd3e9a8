# While one writer holds the directory, a second gets a clear error naming it.
tckpt save ck --step 1 "$TD/tiny.safetensors" -q
"$PY" - <<'PY'
import fcntl, os, subprocess
fd = os.open('ck/.lock', os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0); os.write(fd, b'4242\n')
r = subprocess.run(['tckpt', 'save', 'ck', '--step', '2', os.environ['TD'] + '/tiny.safetensors'])
print('exit', r.returncode)
PY
tckpt ls ck | cut -d' ' -f1
