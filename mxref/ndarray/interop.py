"""Sharing memory with other array libraries: ``from_numpy`` and DLPack (``to_dlpack_for_read``,
``to_dlpack_for_write``, ``from_dlpack``), and MXNet's raw-bytes pickle state
(``__getstate__``/``__setstate__``).

An NDArray made this way wraps the other library's memory in a *foreign* storage handle: the
chunk reads and writes it in place and, when the NDArray goes away, gives nothing back to
mxref's pools (the memory belongs to whoever made it). The other way round, a DLPack capsule of
an NDArray keeps the NDArray's chunk alive for as long as the consumer holds the memory, so the
pool cannot hand those bytes to another array meanwhile.
"""
from __future__ import annotations

import numpy as np

from .. import engine as _engine
from ..base import MXNetError, normalize_dtype
from ..context import cpu
from ..storage import Handle
from .chunk import Chunk
from .io import _write_array, load_raw
from .ndarray import NDArray

__all__ = ["from_numpy", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]


def _wrap(host: np.ndarray) -> NDArray:
    """An NDArray on cpu(0) over ``host``'s memory (C-contiguous), which it never frees."""
    # NOTE: through a memoryview, so the bytes stay writable here after from_numpy makes
    # ``host`` read-only (numpy passes a base array's read-only flag on to new views).
    flat = np.frombuffer(memoryview(host.reshape(-1).view(np.uint8)), np.uint8)
    handle = Handle(flat, flat.nbytes, cpu(0))      # foreign: no pool owns it
    chunk = Chunk(flat.nbytes, cpu(0), _engine.get().new_variable(), handle)
    return NDArray(chunk, tuple(int(d) for d in host.shape), normalize_dtype(host.dtype), 0)


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """An NDArray with the values of the numpy array ``ndarray``.

    With ``zero_copy=True`` (the default) the NDArray uses ``ndarray``'s memory, and ``ndarray``
    is made read-only: writes must go through the NDArray, so that the engine orders them. The
    array must then be C-contiguous (``ValueError`` otherwise). ``zero_copy=False`` copies.
    """
    if not isinstance(ndarray, np.ndarray):
        raise MXNetError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if not zero_copy:
        from .utils import array  # noqa: PLC0415 - utils imports this package's modules
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("from_numpy: only C-contiguous arrays can be shared without a copy; "
                         "use np.ascontiguousarray or zero_copy=False")
    if not ndarray.flags.writeable:
        # Made read-only by an earlier from_numpy: the memory itself is still writable.
        try:
            ndarray.flags.writeable = True
        except ValueError:
            raise ValueError("from_numpy: the array's memory is read-only; use zero_copy=False") from None
    out = _wrap(ndarray)
    ndarray.flags.writeable = False     # the NDArray's own view (taken above) stays writable
    return out


class _Exported:
    """The numpy view handed to DLPack: its ``__array_interface__`` is the NDArray's memory, and it
    holds the chunk, so the memory outlives the NDArray for as long as the consumer needs it."""

    def __init__(self, arr: NDArray):
        view = arr._data()
        self.__array_interface__ = view.__array_interface__
        self._chunk = arr._chunk
        self._view = view


def _capsule(arr: NDArray):
    if arr.context.device_type != "cpu":
        raise MXNetError(f"to_dlpack: only cpu arrays can be exported, got one on {arr.context}")
    if arr.stype != "default":
        raise MXNetError(f"to_dlpack: only dense arrays can be exported, got stype {arr.stype!r}")
    # A versioned capsule (DLPack 1.0, ``dltensor_versioned``): it says the memory is writable,
    # which a legacy ``dltensor`` capsule cannot, and numpy imports those read-only.
    return np.asarray(_Exported(arr)).__dlpack__(max_version=(1, 0))


def to_dlpack_for_read(data: NDArray):
    """A DLPack capsule (a ``PyCapsule``) of ``data``'s memory, for reading: waits
    until every pending write of ``data`` is done."""
    data.wait_to_read()
    return _capsule(data)


def to_dlpack_for_write(data: NDArray):
    """A DLPack capsule of ``data``'s memory, for writing: waits until every pending read and write
    of ``data`` is done."""
    data.wait_to_write()
    return _capsule(data)


class _Capsule:
    """Gives a bare capsule the ``__dlpack__`` protocol numpy's ``from_dlpack`` consumes."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)      # kDLCPU, device 0


def from_dlpack(dlpack) -> NDArray:
    """An NDArray sharing the memory of a DLPack capsule (or of any object with ``__dlpack__``);
    a capsule can be consumed once."""
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    try:
        host = np.from_dlpack(source)
    except (TypeError, ValueError, BufferError, RuntimeError) as exc:
        raise MXNetError(f"from_dlpack: cannot import {type(dlpack).__name__}: {exc}") from None
    return _wrap(np.ascontiguousarray(host))


def _getstate(self) -> dict:
    """MXNet's pickle state: ``{'handle': <the array in MXNet's raw single-array bytes>}``."""
    parts: list = []
    _write_array(parts, self)
    return {"handle": bytearray(b"".join(parts))}


def _setstate(self, state: dict) -> None:
    """Become the array in ``state['handle']`` (raw bytes; an array saved on a GPU loads on cpu)."""
    loaded = load_raw(bytes(state["handle"]), "NDArray state")
    if loaded is None or loaded.stype != "default":
        raise MXNetError("NDArray.__setstate__: the state holds no dense array")
    self._chunk, self._shape, self._dtype, self._offset = (loaded._chunk, loaded._shape,
                                                           loaded._dtype, loaded._offset)
    self._np = self._ag = self._grad = None


NDArray.to_dlpack_for_read = to_dlpack_for_read
NDArray.to_dlpack_for_write = to_dlpack_for_write
NDArray.__getstate__ = _getstate
NDArray.__setstate__ = _setstate
