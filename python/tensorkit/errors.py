"""Exceptions raised by tensorkit: one base class, one subclass per kind of failure.

Each kind also derives from the built-in exception a Python caller would catch for it,
so ``except ValueError`` sees a bad argument and ``except OSError`` a failed write. The
message is the engine's; ``where`` names the file, step or tensor concerned.
"""
from __future__ import annotations


class TensorkitError(Exception):
    """Base class of every error tensorkit raises.

    Attributes:
        kind: the engine's name of the kind ("usage", "invalid input", "I/O", ...).
        message: the message without location.
        where: the file, step or tensor concerned ("" when none).
    """

    kind = "runtime"

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(f"{message} ({where})" if where else message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.message} ({self.where})" if self.where else self.message


class UsageError(TensorkitError, ValueError):
    """The caller asked for something impossible: a bad option, step, name or target."""

    kind = "usage"


class InvalidInputError(TensorkitError, ValueError):
    """The data on disk is malformed, corrupt or not a checkpoint."""

    kind = "invalid input"


class TensorkitIOError(TensorkitError, OSError):
    """The operating system failed a read, write, open, fsync or rename."""

    kind = "I/O"


class UnavailableError(TensorkitError, RuntimeError):
    """A resource is missing: memory, a GPU, a feature this build lacks."""

    kind = "unavailable"


class TensorkitRuntimeError(TensorkitError, RuntimeError):
    """The operation ran but could not succeed."""

    kind = "runtime"


class InternalError(TensorkitError, RuntimeError):
    """A bug in tensorkit: an invariant was broken."""

    kind = "internal"


_BY_KIND = {cls.kind: cls for cls in (UsageError, InvalidInputError, TensorkitIOError, UnavailableError,
                                      TensorkitRuntimeError, InternalError)}


def _text(raw: bytes) -> str:
    # Names read from a file may hold any bytes; keep them visible rather than fail.
    return raw.decode("utf-8", errors="backslashreplace")


def _from_engine(kind: str, message: bytes, where: bytes) -> TensorkitError:
    """The exception for an engine error (called by the compiled module)."""
    return _BY_KIND.get(kind, TensorkitError)(_text(message), _text(where))
