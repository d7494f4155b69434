"""``mx.nd.add``, ``maximum``, ``greater``, ...: binary functions taking NDArrays or numbers.

As in MXNet 1.x (``python/mxnet/ndarray/ndarray.py``): two arrays use the ``broadcast_*``
operator, an array and a number the ``_*_scalar`` one (the ``_r*_scalar`` one, or the mirrored
comparison, when the number comes first), and two numbers are computed in Python.
"""
from __future__ import annotations

import operator
from typing import Callable, Optional

from ..base import MXNetError, numeric_types
from . import imperative as _imperative
from .ndarray import NDArray

__all__ = ["add", "subtract", "multiply", "divide", "true_divide", "modulo", "power", "maximum",
           "minimum", "hypot", "equal", "not_equal", "greater", "greater_equal", "lesser",
           "lesser_equal", "logical_and", "logical_or", "logical_xor"]

_EMPTY: dict = {}


def _ufunc(lhs, rhs, bcast: str, scalar: str, rscalar: Optional[str], py: Callable, name: str):
    if isinstance(lhs, NDArray):
        if isinstance(rhs, NDArray):
            return _imperative.invoke_name(bcast, [lhs, rhs], _EMPTY)[0]
        if isinstance(rhs, numeric_types):
            return _imperative.invoke_scalar(scalar, lhs, rhs)[0]
    elif isinstance(lhs, numeric_types):
        if isinstance(rhs, NDArray):
            return _imperative.invoke_scalar(rscalar or scalar, rhs, lhs)[0]
        if isinstance(rhs, numeric_types):
            return py(lhs, rhs)
    raise MXNetError(f"{name}: operands must be NDArrays or numbers, got {type(lhs).__name__} and "
                     f"{type(rhs).__name__}")


def _make(name: str, bcast: str, scalar: str, rscalar: Optional[str], py: Callable, doc: str):
    def fn(lhs, rhs):
        return _ufunc(lhs, rhs, bcast, scalar, rscalar, py, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{doc}, element-wise with broadcasting.\n\nParameters\n----------\n"
                  f"lhs : NDArray or number\nrhs : NDArray or number\n\nReturns\n-------\n"
                  f"NDArray, or a number when both operands are numbers.")
    return fn


def _bool(fn):
    return lambda a, b: float(bool(fn(a, b)))


# _make(name, broadcast op, scalar op, op when the number is on the left (None: commutative), ...)
add = _make("add", "broadcast_add", "_plus_scalar", None, operator.add, "lhs + rhs")
subtract = _make("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub, "lhs - rhs")
multiply = _make("multiply", "broadcast_mul", "_mul_scalar", None, operator.mul, "lhs * rhs")
divide = _make("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv, "lhs / rhs")
true_divide = divide
modulo = _make("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod, "lhs % rhs")
power = _make("power", "broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow, "lhs ** rhs")
maximum = _make("maximum", "broadcast_maximum", "_maximum_scalar", None, max, "max(lhs, rhs)")
minimum = _make("minimum", "broadcast_minimum", "_minimum_scalar", None, min, "min(lhs, rhs)")
hypot = _make("hypot", "broadcast_hypot", "_hypot_scalar", None, lambda a, b: (a * a + b * b) ** 0.5,
              "sqrt(lhs**2 + rhs**2)")
equal = _make("equal", "broadcast_equal", "_equal_scalar", None, _bool(operator.eq),
              "1 where lhs == rhs, else 0")
not_equal = _make("not_equal", "broadcast_not_equal", "_not_equal_scalar", None, _bool(operator.ne),
                  "1 where lhs != rhs, else 0")
greater = _make("greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar", _bool(operator.gt),
                "1 where lhs > rhs, else 0")
greater_equal = _make("greater_equal", "broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar", _bool(operator.ge), "1 where lhs >= rhs, else 0")
lesser = _make("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar", _bool(operator.lt),
               "1 where lhs < rhs, else 0")
lesser_equal = _make("lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar",
                     "_greater_equal_scalar", _bool(operator.le), "1 where lhs <= rhs, else 0")
logical_and = _make("logical_and", "broadcast_logical_and", "_logical_and_scalar", None,
                    _bool(lambda a, b: a and b), "1 where both are nonzero, else 0")
logical_or = _make("logical_or", "broadcast_logical_or", "_logical_or_scalar", None,
                   _bool(lambda a, b: a or b), "1 where either is nonzero, else 0")
logical_xor = _make("logical_xor", "broadcast_logical_xor", "_logical_xor_scalar", None,
                    _bool(lambda a, b: bool(a) != bool(b)), "1 where exactly one is nonzero, else 0")
