"""``mx.sym.pow``, ``power``, ``maximum``, ``minimum``, ``hypot``: binary functions of Symbols or numbers.

As in MXNet 1.x (``python/mxnet/symbol/symbol.py``): two Symbols use the element-wise operator
(``_Power``, ``_Maximum``, ... with no broadcasting, unlike ``mx.nd``'s), a Symbol and a number the
``_*Scalar`` one (``_RPowerScalar`` when the number is the base), and two numbers are computed in
Python.
"""
from __future__ import annotations

import math
import operator
from typing import Callable, Optional

from ..base import numeric_types
from .register import wrapper
from .symbol import Symbol

__all__ = ["pow", "power", "maximum", "minimum", "hypot"]


def _make(name: str, op: str, scalar: str, rscalar: Optional[str], py: Callable, doc: str):
    def fn(left, right):
        if isinstance(left, Symbol):
            if isinstance(right, Symbol):
                return wrapper(op)(left, right)
            if isinstance(right, numeric_types):
                return wrapper(scalar)(left, scalar=right)
        elif isinstance(left, numeric_types):
            if isinstance(right, Symbol):
                return wrapper(rscalar or scalar)(right, scalar=left)
            if isinstance(right, numeric_types):
                return py(left, right)
        raise TypeError(f"types ({type(left).__name__}, {type(right).__name__}) not supported")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{doc}, element-wise (the two Symbols must have one shape).\n\nParameters\n"
                  f"----------\nleft : Symbol or number\nright : Symbol or number\n\nReturns\n"
                  f"-------\nSymbol, or a number when both operands are numbers.")
    return fn


# _make(name, symbol op, scalar op, op when the number is on the left (None: commutative), python)
pow = _make("pow", "_Power", "_PowerScalar", "_RPowerScalar", operator.pow,  # noqa: A001 - MXNet's name
            "base ** exp")
power = _make("power", "_Power", "_PowerScalar", "_RPowerScalar", operator.pow, "base ** exp")
maximum = _make("maximum", "_Maximum", "_MaximumScalar", None,
                lambda a, b: a if a > b else b, "max(left, right)")
minimum = _make("minimum", "_Minimum", "_MinimumScalar", None,
                lambda a, b: a if a < b else b, "min(left, right)")
hypot = _make("hypot", "_Hypot", "_HypotScalar", None, math.hypot, "sqrt(left**2 + right**2)")
