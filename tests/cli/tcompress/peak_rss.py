# Run a command, count the bytes it writes to stdout, and report its peak resident set
# size against a limit: peak_rss.py LIMIT_MB [--stdin FILE] CMD [ARG...]
# Prints "N bytes out, exit RC, peak RSS under LIMIT MB" (or "... over LIMIT MB: X MB").
import os
import resource
import subprocess
import sys

limit_mb = int(sys.argv[1])
args = sys.argv[2:]
stdin = subprocess.DEVNULL
if args[0] == "--stdin":
    stdin = open(args[1], "rb")
    args = args[2:]
env = dict(os.environ)
allowed_mb = limit_mb
if env.get("TK_SANITIZE"):
    # AddressSanitizer keeps freed blocks (256 MB by default) in quarantine, resident: the
    # bound is on the tool's own memory, so the quarantine is kept small here. Its shadow
    # memory (one byte per 8 the tool touches) and the quarantine are resident too, so
    # the limit is the tool's: LIMIT of its own, plus LIMIT/8 and 16 MB of ASan's. (A
    # 320 MiB bomb restores in 206 MB of the plain build and 265 MB under ASan.)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16"
    allowed_mb = limit_mb * 9 / 8 + 16
proc = subprocess.Popen(args, stdin=stdin, stdout=subprocess.PIPE, env=env)
count = 0
while chunk := proc.stdout.read(1 << 20):
    count += len(chunk)
rc = proc.wait()
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KiB
verdict = f"under {limit_mb} MB" if peak_mb < allowed_mb else f"over {limit_mb} MB: {peak_mb:.0f} MB"
print(f"{count} bytes out, exit {rc}, peak RSS {verdict}")
