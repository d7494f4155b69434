"""Symbol functions written over an operator: ``linspace``, ``histogram`` and ``split_v2``.

MXNet 1.x's Python functions of the same names (``python/mxnet/symbol/symbol.py``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .register import wrapper
from .symbol import Symbol

__all__ = ["linspace", "histogram", "split_v2"]


def linspace(start: float, stop: float, num: int, endpoint: bool = True, name: Optional[str] = None,
             dtype=None) -> Symbol:
    """``num`` evenly spaced values from ``start`` to ``stop`` (float32 unless ``dtype``)."""
    return wrapper("_linspace")(start=start, stop=stop, num=num, endpoint=endpoint, name=name,
                                dtype=np.float32 if dtype is None else dtype)


def histogram(a: Symbol, bins=10, range=None, **kwargs) -> Symbol:  # noqa: A002 - MXNet's name
    """``(counts, edges)`` of ``a``: ``bins`` a Symbol of edges, or an int with a required ``range``."""
    if isinstance(bins, Symbol):
        return wrapper("_histogram")(a, bins, **kwargs)
    if isinstance(bins, (int, np.integer)):
        if range is None:
            raise ValueError("null range is not supported in symbol mode")
        return wrapper("_histogram")(a, bin_cnt=int(bins), range=tuple(range), **kwargs)
    raise ValueError("bins argument should be either an integer or an NDArray")


def split_v2(ary: Symbol, indices_or_sections, axis: int = 0, squeeze_axis: bool = False) -> Symbol:
    """Split along ``axis`` into ``indices_or_sections`` equal pieces (an int; the axis length comes
    from shape inference) or at the given indices (a tuple)."""
    if isinstance(indices_or_sections, (int, np.integer)):
        return wrapper("_split_v2")(ary, indices=(), axis=axis, squeeze_axis=squeeze_axis,
                                    sections=int(indices_or_sections))
    if isinstance(indices_or_sections, tuple):
        return wrapper("_split_v2")(ary, indices=(0,) + tuple(indices_or_sections), axis=axis,
                                    squeeze_axis=squeeze_axis)
    raise ValueError("indices_or_sections must either int or tuple of ints")


def _split_v2_method(self, *args, **kwargs):
    """Same as ``mx.sym.split_v2(self, *args, **kwargs)``."""
    return split_v2(self, *args, **kwargs)


Symbol.split_v2 = _split_v2_method       # MXNet's fluent method
