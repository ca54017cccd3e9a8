"""The "other load" of the benchmarks that measure beside it: `with busy(n):` runs n
CPU-bound `yes` processes for the block (none for n == 0) and ends them after it;
`for label in loads():` runs the loop's body idle, then beside one `yes`."""
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


def loads():
    """Yields "idle", then "beside yes" with one `yes` running until the next step."""
    for label, processes in (("idle", 0), ("beside yes", 1)):
        with busy(processes):
            yield label
