#!/usr/bin/env python3
"""Two builds of tcompress on the same command, alternating (A, B, B, A, ...).

  tcompress_ab.py OLD_BUILD,NEW_BUILD ROUNDS TCOMPRESS-ARGS...

Runs BUILD/tcompress TCOMPRESS-ARGS for each build in each round, the order reversed
every other round. Before each run the file x.out (in the current directory) is removed
and dirty pages are written back (sync), outside the time. Prints each build's median
and every time, sorted. Example, a restore to a file:
  tcompress_ab.py old,build 8 -d x.tkz -o x.out -j 1
"""
import os
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    builds, rounds, args = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3:]
    times = {b: [] for b in builds}
    for r in range(rounds):
        for b in builds if r % 2 == 0 else builds[::-1]:
            if os.path.exists("x.out"):
                os.remove("x.out")
            os.sync()
            start = time.perf_counter()
            subprocess.run([os.path.join(b, "tcompress")] + args, check=True, stderr=subprocess.DEVNULL)
            times[b].append(time.perf_counter() - start)
    for b in builds:
        print(b, f"median {statistics.median(times[b]):.3f}", " ".join(f"{t:.2f}" for t in sorted(times[b])))


if __name__ == "__main__":
    main()
