"""ctypes bindings of the checkpoint engine's C API (libtkckpt, include/tk_ckpt.h):
its structures and every function's signature, for the interop tests and the scripts
that drive the library from Python."""
import ctypes

class Options(ctypes.Structure):
    _fields_ = [("read_only", ctypes.c_int32), ("durable_dir", ctypes.c_char_p),
                ("keep_last", ctypes.c_uint32), ("keep_every", ctypes.c_uint32),
                ("compression", ctypes.c_int32), ("incremental", ctypes.c_int32),
                ("full_every", ctypes.c_uint32), ("delta_max_ratio", ctypes.c_double),
                ("staging_limit", ctypes.c_uint64), ("shard_bytes", ctypes.c_uint64),
                ("threads", ctypes.c_int32)]


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p),
                ("nbytes", ctypes.c_uint64)]


class SaveStats(ctypes.Structure):
    _fields_ = [("step", ctypes.c_uint64), ("stall_seconds", ctypes.c_double),
                ("write_seconds", ctypes.c_double), ("commit_seconds", ctypes.c_double),
                ("logical_bytes", ctypes.c_uint64), ("written_bytes", ctypes.c_uint64),
                ("tensors_stored", ctypes.c_uint64), ("tensors_referenced", ctypes.c_uint64),
                ("tensors_delta", ctypes.c_uint64)]


class StepSummary(ctypes.Structure):
    _fields_ = [("step", ctypes.c_uint64), ("tensors", ctypes.c_uint64),
                ("logical_bytes", ctypes.c_uint64), ("stored_bytes", ctypes.c_uint64),
                ("has_parent", ctypes.c_int32), ("parent", ctypes.c_uint64),
                ("durable", ctypes.c_int32), ("created", ctypes.c_char_p)]


def load_library(path):
    """libtkckpt at `path`, its functions typed."""
    lib = ctypes.CDLL(path)
    handle, step, u64, size, status = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int
    strings = ctypes.POINTER(ctypes.c_char_p)
    signatures = {
        "tk_ckpt_version": (ctypes.c_int, []),
        "tk_ckpt_last_error": (ctypes.c_char_p, []),
        "tk_ckpt_options_init": (None, [ctypes.POINTER(Options)]),
        "tk_ckpt_open": (status, [ctypes.c_char_p, ctypes.POINTER(Options), ctypes.POINTER(handle)]),
        "tk_ckpt_close": (status, [handle]),
        "tk_ckpt_save_async": (status, [handle, u64, ctypes.POINTER(Tensor), size, strings, strings, size,
                                        ctypes.c_int, ctypes.POINTER(u64)]),
        "tk_ckpt_wait": (status, [handle, u64, ctypes.POINTER(SaveStats)]),
        "tk_ckpt_save": (status, [handle, u64, ctypes.POINTER(Tensor), size, strings, strings, size,
                                  ctypes.POINTER(SaveStats)]),
        "tk_ckpt_wait_all": (status, [handle]),
        "tk_ckpt_latest": (status, [handle, ctypes.POINTER(u64)]),
        "tk_ckpt_list": (status, [handle, ctypes.POINTER(u64), size, ctypes.POINTER(size)]),
        "tk_ckpt_step_open": (status, [handle, u64, ctypes.POINTER(step)]),
        "tk_ckpt_step_close": (None, [step]),
        "tk_ckpt_step_info": (status, [step, ctypes.POINTER(StepSummary)]),
        "tk_ckpt_step_tensor": (status, [step, size, ctypes.POINTER(Tensor)]),
        "tk_ckpt_step_metadata": (status, [step, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]),
        "tk_ckpt_restore_into": (status, [handle, u64, ctypes.POINTER(Tensor), size]),
        "tk_ckpt_verify": (status, [handle, u64, ctypes.POINTER(u64), ctypes.c_char_p, size]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib
