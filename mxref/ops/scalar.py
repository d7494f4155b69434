"""Array-with-scalar operators: ``_plus_scalar``, ``_rdiv_scalar``, ``_greater_scalar``, ...

What ``a + 1``, ``1 / a`` and ``a > 0`` dispatch to. The scalar is a ``float`` parameter; on an
integer array it is truncated to an integer first (MXNet casts it to the array's dtype), so
``int_array + 1.5`` adds 1 and the result keeps the array's dtype. ``r`` ops put the scalar on the
left: ``_rminus_scalar(x, s) = s - x``.

Gradients: ``d(x + s) = g``, ``d(x * s) = g * s``, ``d(s / x) = -g * s / x**2``,
``d(x ** s) = g * s * x**(s-1)``, ``d(s ** x) = g * y * ln s``; comparisons have zero gradient.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..graph import NodeEntry, make_node
from .d2 import differentiable, power, scalar_gradient, scale, times
from .elemwise import trunc_divide, zero_grads
from .registry import OpDef, Param, assign, register

__all__ = ["SCALAR_PARAMS"]

SCALAR_PARAMS = {"scalar": Param("float", 1.0, "scalar input value"),
                 "is_int": Param("bool", True, "whether the scalar is an integer (numpy front end)")}


def _scalar_for(x: np.ndarray, s: float):
    return int(s) if x.dtype.kind in "iub" else s


def _kernel(fn: Callable, scalar_ufunc=None) -> Callable:
    def kernel(octx, params, inputs, outputs, req):
        x = inputs[0]
        s = params["scalar"]
        if x.dtype.kind in "iub":
            s = int(s)
        r = req[0]
        if r == "write" or r == "inplace":
            fn(x, s, outputs[0])
        elif r == "add":
            tmp = np.empty_like(outputs[0])
            fn(x, s, tmp)
            outputs[0] += tmp
    # ``(ufunc, i)`` when ``write`` is exactly ``ufunc`` with the scalar as its input ``i``: the
    # compiled dispatch then calls the ufunc's inner loop directly (``dispatch_core.UfuncLoop``).
    kernel.scalar_ufunc = scalar_ufunc
    return kernel


def _rdivide(x, s, out):
    return trunc_divide(np.asarray(s, dtype=x.dtype), x, out)


def _power(x, s, out):
    if out.dtype.kind == "f":
        return np.power(x, s, out=out)
    return np.copyto(out, np.power(x.astype(np.float64), s), casting="unsafe")


def _rpower(x, s, out):
    return np.copyto(out, np.power(float(s), x), casting="unsafe")


def _hypot(x, s, out):
    return np.copyto(out, np.hypot(x, s), casting="unsafe")


def _cmp(u):
    return lambda x, s, out: u(x, s, out=out, casting="unsafe")


def _scaled(op: str, factor: Callable = None):
    """Gradient ``op(g, scalar')`` reusing a scalar op: ``d(x*s) = g*s``, ``d(x/s) = g/s``, ..."""
    def grad(node, ograds):
        params = dict(node.params)
        if factor is not None:
            params["scalar"] = factor(params["scalar"])
        return [NodeEntry(make_node(op, [ograds[0]], node.name + "_backward", params=params), 0, 0)]
    return grad


def _identity_grad(node, ograds):
    return [ograds[0]]


def _with_backward(name: str, deriv: Callable, use: str = "x") -> Callable:
    """Register ``_backward_<name>(ograd, x or y)`` computing ``g * deriv(z, s)``; return the grad fn."""
    def kernel(octx, params, inputs, outputs, req):
        g, z = inputs
        with np.errstate(divide="ignore", invalid="ignore"):
            assign(outputs[0], req[0], g * deriv(z, _scalar_for(z, params["scalar"])))
    bname = "_backward" + name
    register(OpDef(bname, kernel, arguments=("ograd", "data"), params=SCALAR_PARAMS, inplace=[(0, 0)]))

    def grad(node, ograds):
        z = node.inputs[0] if use == "x" else NodeEntry(node, 0, 0)
        return [NodeEntry(make_node(bname, [ograds[0], z], node.name + "_backward",
                                    params=node.params), 0, 0)]
    return grad


def _register(name: str, fn: Callable, grad: Callable, alias: str, scalar_ufunc=None) -> None:
    register(OpDef(name, _kernel(fn, scalar_ufunc), params=SCALAR_PARAMS, inplace=[(0, 0)],
                   gradient=grad, aliases=(alias,),
                   doc=f"{name}(data, scalar): elementwise with a scalar."))


_register("_plus_scalar", lambda x, s, out: np.add(x, s, out=out), _identity_grad, "_PlusScalar",
          (np.add, 1))
_register("_minus_scalar", lambda x, s, out: np.subtract(x, s, out=out), _identity_grad, "_MinusScalar",
          (np.subtract, 1))
_register("_rminus_scalar", lambda x, s, out: np.subtract(s, x, out=out),
          _scaled("_mul_scalar", lambda s: -1.0), "_RMinusScalar", (np.subtract, 0))
_register("_mul_scalar", lambda x, s, out: np.multiply(x, s, out=out), _scaled("_mul_scalar"),
          "_MulScalar", (np.multiply, 1))
_register("_div_scalar", lambda x, s, out: np.divide(x, s, out=out) if out.dtype.kind == "f"
          else trunc_divide(x, np.asarray(s, x.dtype), out),
          _scaled("_div_scalar"), "_DivScalar")
_register("_rdiv_scalar", _rdivide, _with_backward("_rdiv_scalar", lambda x, s: -s / (x * x)),
          "_RDivScalar")
_register("_power_scalar", _power,
          _with_backward("_power_scalar", lambda x, s: s * np.power(x, s - 1.0)), "_PowerScalar")
_register("_rpower_scalar", _rpower,
          _with_backward("_rpower_scalar", lambda y, s: y * np.log(s), use="y"), "_RPowerScalar")
_register("_maximum_scalar", lambda x, s, out: np.maximum(x, s, out=out),
          _with_backward("_maximum_scalar", lambda x, s: x >= s), "_MaximumScalar")
_register("_minimum_scalar", lambda x, s, out: np.minimum(x, s, out=out),
          _with_backward("_minimum_scalar", lambda x, s: x <= s), "_MinimumScalar")
_register("_mod_scalar", lambda x, s, out: np.mod(x, s, out=out), _identity_grad, "_ModScalar")
_register("_rmod_scalar", lambda x, s, out: np.mod(s, x, out=out),
          _with_backward("_rmod_scalar", lambda x, s: -np.floor(s / x)), "_RModScalar")
_register("_hypot_scalar", _hypot, _with_backward("_hypot_scalar", lambda x, s: x / np.hypot(x, s)),
          "_HypotScalar")

_COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
            "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal,
            "logical_and": np.logical_and, "logical_or": np.logical_or,
            "logical_xor": np.logical_xor}
for _name, _u in _COMPARE.items():
    _register(f"_{_name}_scalar", _cmp(_u), zero_grads,
              "_" + "".join(w.capitalize() for w in _name.split("_")) + "Scalar")


# Second derivatives: the backward ops of the scalar powers have gradients too (``d2.py``).
# ``d2(mk, h, z, s) = h * d'(z)``, with ``d`` what the backward op multiplies by.
differentiable("_backward_power_scalar", scalar_gradient(      # d = s x^(s-1), d' = s (s-1) x^(s-2)
    lambda mk, h, x, s: times(mk, h, scale(mk, power(mk, x, s - 2.0), s * (s - 1.0)))))
differentiable("_backward_rdiv_scalar", scalar_gradient(       # s / x: d = -s/x^2, d' = 2s/x^3
    lambda mk, h, x, s: times(mk, h, scale(mk, power(mk, x, -3.0), 2.0 * s))))
differentiable("_backward_rpower_scalar", scalar_gradient(     # s ** x (z = y): d = y ln s, d' = ln s
    lambda mk, h, y, s: scale(mk, h, math.log(s))))
