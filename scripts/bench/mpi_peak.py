"""Peak resident memory of every rank of an mpirun, for the MPI benchmark scripts."""
import os


def timed(work, tool):
    """`tool` under /usr/bin/time, each rank writing its peak resident KiB to its own file
    in `work` (mpirun may close a rank's stderr before time writes to it)."""
    for f in os.listdir(work):
        if f.startswith("peak."):
            os.remove(os.path.join(work, f))
    return ["sh", "-c", f'exec /usr/bin/time -f %M -o {work}/peak.${{OMPI_COMM_WORLD_RANK:-0}} "$@"', "sh", *tool]


def peak_mib(work):
    """The largest peak of the ranks of the last timed() run, in MiB."""
    peaks = [int(open(os.path.join(work, f)).read().split()[-1]) for f in os.listdir(work) if f.startswith("peak.")]
    return max(peaks) / 1024
