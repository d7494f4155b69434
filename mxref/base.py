"""Errors, environment flags and dtype tables shared by every part of mxref."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["MXNetError", "env_int", "env_str", "env_bool", "env_float", "DTYPE_NP_TO_MX",
           "DTYPE_MX_TO_NP", "normalize_dtype", "dtype_name", "string_types", "numeric_types",
           "integer_types", "_Null"]


class MXNetError(RuntimeError):
    """The one error type mxref raises for bad input and failed operations (``mx.base.MXNetError``;
    a ``RuntimeError``, as MXNet's).

    Errors raised inside asynchronous engine work are re-raised as ``MXNetError`` at the next wait,
    with the failing operator's name in the message and the original exception as ``__cause__``.
    """


class _NullType:
    """Placeholder for "argument not given" (MXNet's ``_Null``); distinct from ``None``."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "_Null"

    def __bool__(self):
        return False


_Null = _NullType()

string_types = (str,)
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)


def env_str(name: str, default: str) -> str:
    """Read a string environment flag; every flag is listed in ``docs/env_vars.md``."""
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise MXNetError(f"environment variable {name}={value!r} is not an integer") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise MXNetError(f"environment variable {name}={value!r} is not a number") from None


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


# MXNet's type flags (mshadow::TypeFlag); used by the binary NDArray format and JSON graphs.
DTYPE_NP_TO_MX = {
    np.dtype(np.float32): 0,
    np.dtype(np.float64): 1,
    np.dtype(np.float16): 2,
    np.dtype(np.uint8): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.int8): 5,
    np.dtype(np.int64): 6,
    np.dtype(np.bool_): 7,
}
DTYPE_MX_TO_NP = {v: k for k, v in DTYPE_NP_TO_MX.items()}

_SUPPORTED = tuple(DTYPE_NP_TO_MX)


def normalize_dtype(dtype, what: str = "dtype") -> np.dtype:
    """Turn a name, numpy type, ``np.dtype`` or MXNet type flag into a supported ``np.dtype``."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if int(dtype) in DTYPE_MX_TO_NP:
            return DTYPE_MX_TO_NP[int(dtype)]
        raise MXNetError(f"unknown MXNet type flag {dtype} for {what}")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise MXNetError(f"invalid {what} {dtype!r}") from None
    if dt not in DTYPE_NP_TO_MX:
        names = ", ".join(d.name for d in _SUPPORTED)
        raise MXNetError(f"unsupported {what} {dt.name}; supported: {names}")
    return dt


def dtype_name(dtype) -> str:
    return np.dtype(dtype).name


# An MXNetError that is also Python's IndexError, as MXNet 1.x raises for an index out of range
# (``gather_nd``); the engine re-raises it with its type at the wait.
class MXNetIndexError(MXNetError, IndexError):
    """An index out of range: both ``MXNetError`` and ``IndexError``."""



# ---------------------------------------------------------------------------------------------
# MXNet's ``mxnet.base`` helpers that scripts and MXNet's own tests import by name.
# ---------------------------------------------------------------------------------------------

mx_real_t = np.float32          # MXNet's default real type


def py_str(x) -> str:
    """A ``str`` from bytes (UTF-8) or str: MXNet's C API returned bytes, and callers kept the habit."""
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else str(x)


def _as_list(obj) -> list:
    """``obj`` itself when it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


def data_dir_default() -> str:
    """Where downloaded data and models go when ``MXNET_HOME`` is unset: ``~/.mxnet``
    (``%APPDATA%\\mxnet`` on Windows)."""
    import platform
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA"), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """``MXNET_HOME`` if set, else ``data_dir_default()``."""
    return os.getenv("MXNET_HOME", data_dir_default())


class NotImplementedForSymbol(MXNetError):
    """An NDArray-only function called on a ``Symbol`` (``bool(sym)``, ``sym.asnumpy()``, ...)."""

    def __init__(self, function, alias=None, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + " is not implemented for Symbol and only available in NDArray."
