"""NDArray functions written over an operator: ``linspace``, ``moveaxis``, ``histogram``, ``split_v2``,
and ``contrib.boolean_mask`` (whose output shape depends on the mask's values).

They are MXNet 1.x's Python functions of the same names (``python/mxnet/ndarray/ndarray.py``):
each checks its arguments and runs one operator (``_linspace``, ``transpose``, ``_histogram``,
``_split_v2``, ``_contrib_boolean_mask``), so autograd records them like any other call.
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence, Union

import numpy as np

from ..base import MXNetError, normalize_dtype
from ..context import Context
from ..ops import registry
from . import imperative as _imperative
from .ndarray import NDArray
from .register import make_function
from .utils import _create, array

__all__ = ["linspace", "moveaxis", "histogram", "split_v2", "boolean_mask", "normalize_axes"]


def linspace(start: float, stop: float, num: int, endpoint: bool = True, ctx: Optional[Context] = None,
             dtype=np.float32) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless ``endpoint=False``).

    Examples
    --------
    >>> mx.nd.linspace(2.0, 3.0, 5).asnumpy()
    array([2.  , 2.25, 2.5 , 2.75, 3.  ], dtype=float32)
    """
    return _create("_linspace", ctx, start=start, stop=stop, num=num, endpoint=endpoint,
                   dtype=normalize_dtype(dtype))


def normalize_axes(what: str, axes: Union[int, Sequence[int]], ndim: int) -> tuple:
    """``axes`` as non-negative ints, each at most once; ``ValueError`` naming ``what`` otherwise."""
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{what} axis {a} is out of bounds for an array of {ndim} dimensions")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {what} {axes}")
    return tuple(out)


def moveaxis(tensor: NDArray, source, destination) -> NDArray:
    """Move axes ``source`` to positions ``destination`` (ints or sequences), the others keeping
    their order: ``moveaxis(zeros((3, 4, 5)), [0, 1], [-1, -2]).shape == (5, 4, 3)``."""
    src = normalize_axes("source", source, tensor.ndim)
    dst = normalize_axes("destination", destination, tensor.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(tensor.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return make_function(registry.get("transpose"))(tensor, axes=tuple(order))


def histogram(a: NDArray, bins=10, range=None):  # noqa: A002 - MXNet's argument name
    """``(counts, edges)`` of ``a``: ``bins`` an int (equal bins over ``range``) or an NDArray of
    edges. Without ``range`` an int ``bins`` is numpy's histogram of the values (with a warning,
    as MXNet)."""
    if isinstance(bins, NDArray):
        return make_function(registry.get("_histogram"))(a, bins)
    if isinstance(bins, (int, np.integer)):
        if range is None:
            warnings.warn("range is not specified, using numpy's result to ensure consistency with numpy",
                          stacklevel=2)
            counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
            return array(counts, a.context), array(edges, a.context)
        return make_function(registry.get("_histogram"))(a, bin_cnt=int(bins), range=tuple(range))
    raise ValueError("bins argument should be either an integer or an NDArray")


def split_v2(ary: NDArray, indices_or_sections, axis: int = 0, squeeze_axis: bool = False):
    """Split ``ary`` along ``axis`` into ``indices_or_sections`` equal pieces (an int) or at the
    given indices (a tuple: ``(2, 3)`` gives ``ary[:2], ary[2:3], ary[3:]``). A list of NDArrays,
    or one NDArray for a single piece (as MXNet)."""
    n = ary.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ValueError("array split does not result in an equal division")
        indices = tuple(i * (n // sections) for i in range(sections))
    elif isinstance(indices_or_sections, tuple):
        indices = (0,) + tuple(int(i) for i in indices_or_sections)
    else:
        raise ValueError("indices_or_sections must either int or tuple of ints")
    return make_function(registry.get("_split_v2"))(ary, indices=indices, axis=axis,
                                                     squeeze_axis=squeeze_axis)


_MASK = registry.get("_contrib_boolean_mask")


def boolean_mask(data: NDArray, index: NDArray, axis: int = 0, out: Optional[NDArray] = None,
                 name: Optional[str] = None, **kwargs) -> NDArray:
    """The rows of ``data`` where ``index`` is non-zero (``mx.nd.contrib.boolean_mask``).

    The number of rows is read from ``index`` first, so this call waits for ``index``.
    """
    if not isinstance(data, NDArray) or not isinstance(index, NDArray):
        raise MXNetError("boolean_mask: data and index must be NDArrays")
    size = int(np.count_nonzero(index.asnumpy())) if index.ndim == 1 else -1
    pkey, params = _imperative.parse_params(_MASK, dict(kwargs, axis=axis, size=size))
    return _imperative.invoke(_MASK, pkey, params, [data, index], out, None)[0]


boolean_mask.__doc__ += "\n" + _MASK.doc


def _split_v2_method(self, *args, **kwargs):
    """Same as ``mx.nd.split_v2(self, *args, **kwargs)``."""
    return split_v2(self, *args, **kwargs)


NDArray.split_v2 = _split_v2_method      # MXNet's fluent method
