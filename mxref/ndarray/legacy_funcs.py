"""MXNet 1.x's Python-level NDArray helpers over existing operators: ``concatenate``,
``onehot_encode`` and ``contrib.isinf`` / ``isfinite`` / ``isnan``.

Each is a few operator calls (so autograd and the engine see ordinary operations); they exist
because MXNet's scripts and tests call them by these names.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..base import MXNetError
from . import imperative as _imperative
from .ndarray import NDArray

__all__ = ["concatenate", "onehot_encode", "isinf", "isfinite", "isnan"]


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """Join ``arrays`` along ``axis``; all must agree on the other dims, the dtype and the context.

    With ``always_copy=False`` a single array is returned as it is (no copy).
    """
    arrays = list(arrays)
    if not arrays:
        raise MXNetError("concatenate: arrays must not be empty")
    first = arrays[0]
    if not always_copy and len(arrays) == 1:
        return first
    axis = axis + first.ndim if axis < 0 else axis
    if not 0 <= axis < first.ndim:
        raise MXNetError(f"concatenate: axis {axis} is out of range for arrays of shape {first.shape}")
    rest = first.shape[:axis] + first.shape[axis + 1:]
    for i, a in enumerate(arrays[1:], 1):
        if a.shape[:axis] + a.shape[axis + 1:] != rest:
            raise MXNetError(f"concatenate: array {i} has shape {a.shape}, which differs from array 0's "
                             f"{first.shape} outside axis {axis}")
        if a.dtype != first.dtype or a.context != first.context:
            raise MXNetError(f"concatenate: array {i} is {np.dtype(a.dtype).name} on {a.context}, array 0 "
                             f"is {np.dtype(first.dtype).name} on {first.context}")
    return _imperative.invoke_name("Concat", arrays, {"dim": axis, "num_args": len(arrays)})[0]


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """Write the one-hot rows of ``indices`` (shape ``(n,)``) into ``out`` (shape ``(n, depth)``):
    ``out[i, j] = 1 if j == indices[i] else 0``. Deprecated in MXNet in favour of ``one_hot``."""
    if indices.ndim != 1 or out.ndim != 2 or out.shape[0] != indices.shape[0]:
        raise MXNetError(f"onehot_encode: indices must be (n,) and out (n, depth), got indices "
                         f"{indices.shape} and out {out.shape}")
    params = {"depth": out.shape[1], "dtype": np.dtype(out.dtype).name}
    return _imperative.invoke_name("one_hot", [indices], params, [out])[0]


def isinf(data: NDArray) -> NDArray:
    """1 where ``data`` is +inf or -inf, else 0 (in ``data``'s dtype): ``|x| == inf``."""
    return abs(data) == np.inf


def isfinite(data: NDArray) -> NDArray:
    """1 where ``data`` is neither infinite nor NaN, else 0: ``(x == x) and |x| != inf``."""
    not_nan = data == data   # noqa: PLR0124 - NaN is the one value unequal to itself
    return _imperative.invoke_name("_logical_and", [abs(data) != np.inf, not_nan], {})[0]


def isnan(data: NDArray) -> NDArray:
    """1 where ``data`` is NaN, else 0: ``x != x``."""
    return data != data   # noqa: PLR0124 - NaN is the one value unequal to itself
