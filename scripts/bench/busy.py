"""The "other load" of the benchmarks that measure beside it: `with busy(n):` runs n
CPU-bound `yes` processes for the block (none for n == 0) and ends them after it."""
import contextlib
import subprocess


@contextlib.contextmanager
def busy(processes):
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(processes)]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()
