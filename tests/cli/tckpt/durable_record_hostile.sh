# A planted DIR/durable record (a link, a FIFO, a huge or malformed file) is refused with
# one line and exit 3, at once: tckpt ls never follows, waits on or slurps it.
tckpt save ck "$TD/tiny.safetensors" -q
plant() { rm -f ck/durable; "$@"; timeout 5 tckpt ls ck 2>&1 >/dev/null; echo "rc $?"; }
plant ln -s /etc/passwd ck/durable
plant mkfifo ck/durable
plant sh -c 'head -c 5000 /dev/zero | tr "\0" a > ck/durable'
plant sh -c 'printf "a\nb\n" > ck/durable'
