"""``mx.sym.pow`` / ``power``, ``maximum``, ``minimum`` and ``hypot``: MXNet's two-operand functions
on symbols and numbers.

Two symbols use the element-wise operator (``_Power``, ``_Maximum``, ``_Minimum``, ``_Hypot``; the
operands must have one shape, as in MXNet), a symbol and a number the ``*_scalar`` form, and two
numbers give the plain Python result.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from ..base import numeric_types
from .register import _apply
from .symbol import Symbol

__all__ = ["pow", "power", "maximum", "minimum", "hypot"]


def _ufunc(name: str, left, right, sym_op: str, scalar_op: str, rscalar_op: Optional[str],
           py: Callable):
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return _apply(sym_op, [left, right])
    if isinstance(left, Symbol) and isinstance(right, numeric_types):
        return _apply(scalar_op, [left], {"scalar": right})
    if isinstance(left, numeric_types) and isinstance(right, Symbol):
        return _apply(rscalar_op or scalar_op, [right], {"scalar": left})
    if isinstance(left, numeric_types) and isinstance(right, numeric_types):
        return py(left, right)
    raise TypeError(f"{name}: types ({type(left).__name__}, {type(right).__name__}) not supported")


def pow(base, exp):  # noqa: A001 - MXNet's name
    """``base ** exp`` element-wise; either may be a number."""
    return _ufunc("pow", base, exp, "_Power", "_PowerScalar", "_rpower_scalar", lambda a, b: a ** b)


def power(base, exp):
    """Same as ``pow``."""
    return pow(base, exp)


def maximum(left, right):
    """Element-wise ``max(left, right)``; either may be a number."""
    return _ufunc("maximum", left, right, "_Maximum", "_maximum_scalar", None, max)


def minimum(left, right):
    """Element-wise ``min(left, right)``; either may be a number."""
    return _ufunc("minimum", left, right, "_Minimum", "_minimum_scalar", None, min)


def hypot(left, right):
    """Element-wise ``sqrt(left**2 + right**2)``; either may be a number."""
    return _ufunc("hypot", left, right, "_Hypot", "_hypot_scalar", None, math.hypot)
