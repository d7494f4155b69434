"""Symbols that create arrays from parameters alone: ``zeros``, ``ones``, ``full``, ``arange``, ``eye``.

Thin functions over the creation operators (``_zeros``, ``_ones``, ``_full``, ``_arange``,
``_eye``), with MXNet 1.x's signatures and its float32 default dtype.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from .register import wrapper
from .symbol import Symbol

__all__ = ["zeros", "ones", "full", "arange", "eye"]

Shape = Union[int, Sequence[int]]


def _dtype(dtype):
    # NOTE: MXNet's front end writes float32 explicitly, so the node's attrs always name a dtype.
    return np.float32 if dtype is None else dtype


def zeros(shape: Shape, dtype=None, **kwargs) -> Symbol:
    """A symbol of the given shape and dtype (default float32) filled with zeros.

    Parameters
    ----------
    shape : int or sequence of ints
        Shape of the new array.
    dtype : str or numpy.dtype, optional
        The element type, float32 when left out.
    **kwargs
        ``name``, ``attr`` and ``ctx``, as for any operator.

    Returns
    -------
    Symbol
    """
    return wrapper("_zeros")(shape=shape, dtype=_dtype(dtype), **kwargs)


def ones(shape: Shape, dtype=None, **kwargs) -> Symbol:
    """A symbol of the given shape and dtype (default float32) filled with ones (see ``zeros``)."""
    return wrapper("_ones")(shape=shape, dtype=_dtype(dtype), **kwargs)


def full(shape: Shape, val: float, dtype=None, **kwargs) -> Symbol:
    """A symbol of the given shape and dtype (default float32) filled with ``val``.

    Examples
    --------
    >>> mx.sym.full((2,), 7).eval()[0].asnumpy()
    array([7., 7.], dtype=float32)
    """
    return wrapper("_full")(shape=shape, dtype=_dtype(dtype), value=float(val), **kwargs)


def arange(start: float, stop: Optional[float] = None, step: float = 1.0, repeat: int = 1,
           infer_range: bool = False, name: Optional[str] = None, dtype=None) -> Symbol:
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` when ``stop`` is None), each
    repeated ``repeat`` times.

    Parameters
    ----------
    start, stop, step : number
        As for ``numpy.arange``.
    repeat : int, optional
        How many times each value appears in a row (``repeat=2``: ``0, 0, 1, 1, ...``).
    infer_range : bool, optional
        Take the length from the graph's shape inference instead of ``stop``.
    name : str, optional
        The node's name.
    dtype : str or numpy.dtype, optional
        The element type, float32 when left out.

    Returns
    -------
    Symbol
    """
    return wrapper("_arange")(start=start, stop=stop, step=step, repeat=repeat,
                              infer_range=infer_range, name=name, dtype=_dtype(dtype))


def eye(N: int, M: int = 0, k: int = 0, dtype=None, **kwargs) -> Symbol:
    """An ``N x M`` (``M=0``: ``N x N``) symbol with ones on the ``k``-th diagonal, zeros elsewhere."""
    return wrapper("_eye")(N=N, M=M, k=k, dtype=_dtype(dtype), **kwargs)
