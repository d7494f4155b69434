"""``mxnet.numpy`` by name only: mxref has no NumPy-compatible front end, and every use says so.

MXNet 1.9.1 scripts (and its own tests) import ``mxnet.numpy`` at the top even when they only use
``mx.nd``; the import succeeds here so that such code runs, and any attribute of the module
(``mx.numpy.ones``, ``mx.numpy.ndarray``, ...) raises ``MXNetError`` naming what is missing.
"""
from .base import MXNetError


class NoNumpyFrontEnd(MXNetError, AttributeError):
    """Raised for every attribute of ``mxref.numpy``; an ``AttributeError`` too, so ``hasattr``
    answers ``False`` and ``getattr(mod, name, default)`` falls back."""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)       # module machinery (``__path__``, ``__wrapped__``, ...)
    raise NoNumpyFrontEnd(f"mxnet.numpy.{name}: mxref has no mx.np front end (NumPy-compatible "
                          "arrays); use mx.nd, which follows MXNet's legacy semantics")
