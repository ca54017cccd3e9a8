"""The distributed C API (tk_ckpt_dist.h) from Python through ctypes, under mpirun.

Each rank saves its rows of a global float32 array and a replicated bias from numpy
arrays, then restores a column of the array (another slicing) and compares it bit for
bit. MPI is initialised through ctypes too; with mpi4py one would pass comm.py2f()
instead of the handle computed here (OpenMPI's MPI_COMM_WORLD is the address of
ompi_mpi_comm_world). Usage: mpirun -np N python dckpt_ctypes.py LIBTKCKPT DIR
"""
import ctypes
import ctypes.util
import sys

import numpy as np

mpi = ctypes.CDLL(ctypes.util.find_library("mpi"), mode=ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(sys.argv[1])
directory = sys.argv[2].encode()

mpi.MPI_Init(None, None)
world = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_comm_world")))
rank, size = ctypes.c_int(), ctypes.c_int()
mpi.MPI_Comm_rank(world, ctypes.byref(rank))
mpi.MPI_Comm_size(world, ctypes.byref(size))
mpi.MPI_Comm_c2f.restype = ctypes.c_int
fint = mpi.MPI_Comm_c2f(world)
rank, size = rank.value, size.value

I64P = ctypes.POINTER(ctypes.c_int64)


class Slice(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("ndim", ctypes.c_int32),
                ("global_shape", I64P), ("offsets", I64P), ("shape", I64P),
                ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64), ("replicated", ctypes.c_int32)]


def dims(values):
    return (ctypes.c_int64 * len(values))(*values)


def check(status, what):
    if status != 0:
        lib.tk_ckpt_last_error.restype = ctypes.c_char_p
        sys.exit(f"rank {rank}: {what} returned {status}: {lib.tk_ckpt_last_error().decode()}")


ROWS, COLS = 11, 4
full = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) * 0.5
first, last = rank * ROWS // size, (rank + 1) * ROWS // size
mine = full[first:last].copy()
bias = np.array([1.5, -2.0, 3.25, 0.0], dtype=np.float32)
gshape, bshape = dims([ROWS, COLS]), dims([COLS])
offsets, shape = dims([first, 0]), dims([last - first, COLS])
slices = (Slice * 2)(Slice(b"w", b"F32", 2, gshape, offsets, shape, mine.ctypes.data, mine.nbytes, 0),
                     Slice(b"b", b"F32", 1, bshape, None, None, bias.ctypes.data, bias.nbytes, 1))

handle = ctypes.c_void_p()
check(lib.tk_dckpt_open(directory, fint, None, ctypes.byref(handle)), "tk_dckpt_open")
check(lib.tk_dckpt_save_async(handle, ctypes.c_uint64(1), slices, ctypes.c_size_t(2)), "tk_dckpt_save_async")
mine[:] = -1  # the save copied the data
check(lib.tk_dckpt_wait(handle, None), "tk_dckpt_wait")

column = np.zeros(ROWS, dtype=np.float32)
got_bias = np.zeros(COLS, dtype=np.float32)
col = rank % COLS
wanted = (Slice * 2)(Slice(b"w", b"F32", 2, gshape, dims([0, col]), dims([ROWS, 1]), column.ctypes.data, column.nbytes, 0),
                     Slice(b"b", b"F32", 1, bshape, None, None, got_bias.ctypes.data, got_bias.nbytes, 0))
check(lib.tk_dckpt_restore(handle, ctypes.c_uint64(1), wanted, ctypes.c_size_t(2)), "tk_dckpt_restore")
check(lib.tk_dckpt_close(handle), "tk_dckpt_close")
ok = np.array_equal(column, full[:, col]) and np.array_equal(got_bias, bias)
if not ok:
    print(rank, column, full[:, col], got_bias, file=sys.stderr)
flag, total = ctypes.c_int(0 if ok else 1), ctypes.c_int()
mpi.MPI_Allreduce(ctypes.byref(flag), ctypes.byref(total), 1,
                  ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_int"))),
                  ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_op_sum"))), world)
if rank == 0:
    print("bit-exact on every rank" if total.value == 0 else f"{total.value} ranks differ")
mpi.MPI_Finalize()
sys.exit(1 if total.value else 0)
