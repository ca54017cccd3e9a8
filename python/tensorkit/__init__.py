"""tensorkit for Python: the checkpoint engine of the tensorkit tools for training loops.

    import tensorkit.ckpt            # Checkpointer: async save, restore, ls, verify

Errors are tensorkit.TensorkitError subclasses (tensorkit.errors) carrying the
engine's message.
"""
from .errors import (InternalError, InvalidInputError, TensorkitError, TensorkitIOError, TensorkitRuntimeError,
                     UnavailableError, UsageError)

__all__ = ["TensorkitError", "UsageError", "InvalidInputError", "TensorkitIOError", "UnavailableError",
           "TensorkitRuntimeError", "InternalError"]
