"""Elementwise operators: unary math (``exp``, ``sqrt``, ``relu``, ...) and same-shape binary math.

Every kernel is one numpy call writing straight into the preallocated output, so ``c = a + b`` pays
for nothing but the ufunc. Output dtype is the input dtype, also for integers (``sqrt`` of an int32
array is an int32 array, as in MXNet); ints divide with truncation toward zero, as C does.

Gradients: ``d(f(x)) = ograd * f'(x)``. Each differentiable unary op gets a ``_backward_<op>`` op
with inputs ``(ograd, x)`` or ``(ograd, y)`` (whichever the derivative is cheaper from). Binary ops
``z = f(l, r)`` get ``_backward_<op>(ograd, l, r) -> (dl, dr)``, which also sums a broadcast
gradient back to each input's shape, so the ``broadcast_*`` family reuses it. Rounding, sign and
comparisons have zero gradient.

Each unary op is one row of ``_UNARY``: forward, derivative, which of ``x``/``y`` the backward
takes, and the second derivative (the backward op's gradient, see ``d2.py``). The activations
(relu, sigmoid, tanh, softsign) are cards in ``activations.py``, shared with ``Activation``.
Kernels: numpy only (the reference); none of these ops registers a fast kernel.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Optional, Sequence

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .d2 import Builder, differentiable, neg, one_minus_x2, power, scale, times, unary_gradient, x2_plus
from .registry import OpDef, assign, elemwise_shape, elemwise_type, register

__all__ = ["is_integer", "make_kernel", "sum_to_shape", "zero_grads", "output_grads", "register_unary",
           "register_binary", "register_binary_backward", "BINARY_MATH", "COMPARISONS", "trunc_divide",
           "named_rule", "ufunc"]


# ---------------------------------------------------------------------------------------------
# Helpers shared by the tensor operator files
# ---------------------------------------------------------------------------------------------

def is_integer(dtype) -> bool:
    return np.dtype(dtype).kind in "iub"


def make_kernel(fn: Callable) -> Callable:
    """An ``fcompute`` from ``fn(*inputs, out=...)`` writing one output, honouring ``req``."""
    def kernel(octx, params, inputs, outputs, req):
        r = req[0]
        if r == "write" or r == "inplace":
            fn(*inputs, out=outputs[0])
        elif r == "add":
            tmp = np.empty_like(outputs[0])
            fn(*inputs, out=tmp)
            outputs[0] += tmp
    # For a ufunc, ``write`` is exactly ``fn(*inputs, outputs[0])``: the dispatch calls it
    # directly for such requests (``imperative._kernel``), a Python frame fewer per small op
    # (positionally: ``out=`` costs ~40 ns more per call). Not for the ufuncs whose positional
    # output numpy deprecates.
    kernel.ufunc = fn if isinstance(fn, np.ufunc) and fn not in _OUT_BY_KEYWORD else None
    return kernel


# numpy 2.4 deprecates a third positional argument to these (they are to take more inputs).
_OUT_BY_KEYWORD = (np.maximum, np.minimum)


def sum_to_shape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Sum ``x`` over the axes that broadcasting expanded from ``shape`` (the gradient of a broadcast)."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + i] != 1)
    return x.sum(axis=axes, keepdims=True).reshape(shape)


def zero_grads(node, name: str = "_zero") -> list:
    """``zeros_like`` of every input: the gradient of ops that are flat almost everywhere."""
    return [NodeEntry(make_node("zeros_like", [e], f"{node.name}{name}{i}"), 0, 0)
            for i, e in enumerate(node.inputs)]


def output_grads(node, ograds) -> list:
    """Head gradients with ``None`` (an unused output) replaced by ``zeros_like`` of that output."""
    return [g if g is not None else
            NodeEntry(make_node("zeros_like", [NodeEntry(node, i, 0)], f"{node.name}_ograd{i}"), 0, 0)
            for i, g in enumerate(ograds)]


def named_rule(op: str, rule: Callable) -> Callable:
    """``rule`` (an ``infer_shape``/``infer_type``) whose errors start with the operator's name."""
    def infer(params, items):
        try:
            return rule(params, items)
        except MXNetError as exc:
            if str(exc).startswith(op + ":"):
                raise
            raise MXNetError(f"{op}: {exc}") from None
    return infer


def trunc_divide(lhs, rhs, out):
    """Division as MXNet does it: true division for floats, truncation toward zero for ints."""
    if out.dtype.kind == "f":
        return np.divide(lhs, rhs, out=out)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.trunc(np.true_divide(lhs, rhs))
    return np.copyto(out, np.nan_to_num(q), casting="unsafe")


# ---------------------------------------------------------------------------------------------
# Unary operators
# ---------------------------------------------------------------------------------------------

def _unary_backward(name: str, deriv: Callable, d2: Optional[Callable]):
    def kernel(octx, params, inputs, outputs, req):
        ograd, z = inputs
        with np.errstate(divide="ignore", invalid="ignore"):
            assign(outputs[0], req[0], ograd * deriv(z))
    register(OpDef(f"_backward_{name}", kernel, arguments=("ograd", "data"), inplace=[(0, 0)]))
    if d2 is not None:
        differentiable(f"_backward_{name}", unary_gradient(name, d2))


def register_unary(name: str, fn: Callable, deriv: Callable = None, use: str = "x",
                   aliases: Sequence[str] = (), doc: str = "", grad: Callable = None,
                   d2: Callable = None) -> OpDef:
    """Register ``name(data)`` computing ``fn(x, out=...)``.

    ``deriv`` gives ``dy/dx`` from ``x`` (``use='x'``) or from the output ``y`` (``use='y'``);
    ``deriv=None`` means zero gradient; ``grad`` overrides with a custom gradient function.
    ``d2(mk, h, z)`` gives ``_backward_<name>`` a gradient: ``h * d'(z)`` (see ``d2.py``).
    """
    if grad is None and deriv is not None:
        _unary_backward(name, deriv, d2)

        def grad(node, ograds):
            z = node.inputs[0] if use == "x" else NodeEntry(node, 0, 0)
            n = make_node(f"_backward_{name}", [ograds[0], z], node.name + "_backward")
            return [NodeEntry(n, 0, 0)]
    elif grad is None:
        grad = zero_grads
    return register(OpDef(name, make_kernel(fn), inplace=[(0, 0)], gradient=grad, aliases=aliases,
                          infer_shape=named_rule(name, elemwise_shape),
                          infer_type=named_rule(name, elemwise_type),
                          doc=doc or f"{name}(data), elementwise."))


def ufunc(u):
    """``u(x, out=...)`` that may write any output dtype."""
    # NOTE: 'unsafe' lets integer inputs round-trip through float math (sqrt of int32 -> int32).
    return functools.partial(u, casting="unsafe")


def _exp(x, out):
    # NOTE: numpy's float32 exp (SIMD) is off by an ulp at places (exp(1) = 2.7182820); through
    # float64 the result is the correctly rounded one, as C's expf gives MXNet.
    if x.dtype == np.float32:
        return np.copyto(out, np.exp(x, dtype=np.float64), casting="unsafe")
    return np.exp(x, out=out, casting="unsafe")


def _rsqrt(x, out):
    return np.copyto(out, 1.0 / np.sqrt(x), casting="unsafe")


def _rcbrt(x, out):
    return np.copyto(out, 1.0 / np.cbrt(x), casting="unsafe")


def _round_half_away(x, out):
    return np.copyto(out, np.sign(x) * np.floor(np.abs(x) + 0.5), casting="unsafe")


def _rint(x, out):
    # NOTE: MXNet's rint is floor(x) unless x - floor(x) > 0.5: 1.5 -> 1 and -0.5 -> -1, not even.
    f = np.floor(x)
    return np.copyto(out, np.where(x - f > 0.5, f + 1, f), casting="unsafe")


def _reciprocal(x, out):
    return np.copyto(out, np.reciprocal(x.astype(np.float64) if x.dtype.kind != "f" else x),
                     casting="unsafe")


def _logical_not(x, out):
    return np.logical_not(x, out=out, casting="unsafe")


def _neg_grad(node, ograds):
    return [NodeEntry(make_node("negative", [ograds[0]], node.name + "_backward"), 0, 0)]


def _zeros(mk, h, z):
    return mk("zeros_like", z)       # d is constant (or flat): its derivative is zero


_LN10, _LN2 = np.log(10.0), np.log(2.0)
_M_LN10, _M_LN2 = math.log(10.0), math.log(2.0)    # Python floats: they go into graph attrs
_U = ufunc

# One row per op, its whole math: forward ``fn(x, out)``; the derivative ``d``, from ``x`` or from
# the output ``y`` (the third column: what ``_backward_<op>`` takes), ``None`` for a zero gradient;
# the second derivative ``(mk, h, z) -> h * d'(z)`` as graph nodes (see ``d2.py``), ``None`` where
# the backward op has no gradient. The activations (relu, sigmoid, tanh, softsign) have their own
# cards in ``activations.py``, which Activation shares.
_UNARY = {
    "abs": (_U(np.abs), np.sign, "x", _zeros),                              # d = sign x
    "sign": (_U(np.sign), None, "x", None),
    "round": (_round_half_away, None, "x", None),
    "rint": (_rint, None, "x", None),
    "ceil": (_U(np.ceil), None, "x", None),
    "floor": (_U(np.floor), None, "x", None),
    "trunc": (_U(np.trunc), None, "x", None),
    "fix": (_U(np.trunc), None, "x", None),
    "square": (_U(np.square), lambda x: 2 * x, "x", lambda mk, h, x: scale(mk, h, 2.0)),
    "sqrt": (_U(np.sqrt), lambda y: 0.5 / y, "y",
             lambda mk, h, y: times(mk, h, scale(mk, power(mk, y, -2.0), -0.5))),
    "rsqrt": (_rsqrt, lambda x: -0.5 / (x * np.sqrt(x)), "x",
              lambda mk, h, x: times(mk, h, scale(mk, power(mk, x, -2.5), 0.75))),     # -x^-1.5/2
    "cbrt": (_U(np.cbrt), lambda y: 1.0 / (3 * y * y), "y",
             lambda mk, h, y: times(mk, h, scale(mk, power(mk, y, -3.0), -2 / 3))),
    "rcbrt": (_rcbrt, lambda x: -1.0 / (3 * x * np.cbrt(x)), "x",
              lambda mk, h, x: times(mk, h, scale(mk, power(mk, x, -7 / 3), 4 / 9))),  # -x^(-4/3)/3
    "reciprocal": (_reciprocal, lambda x: -1.0 / (x * x), "x",
                   lambda mk, h, x: times(mk, h, scale(mk, power(mk, x, -3.0), 2.0))),
    "exp": (_exp, lambda y: y, "y", lambda mk, h, y: h),
    "log": (_U(np.log), lambda x: 1.0 / x, "x",
            lambda mk, h, x: times(mk, h, scale(mk, power(mk, x, -2.0), -1.0))),
    "log10": (_U(np.log10), lambda x: 1.0 / (x * _LN10), "x",
              lambda mk, h, x: times(mk, h, scale(mk, power(mk, x, -2.0), -1 / _M_LN10))),
    "log2": (_U(np.log2), lambda x: 1.0 / (x * _LN2), "x",
             lambda mk, h, x: times(mk, h, scale(mk, power(mk, x, -2.0), -1 / _M_LN2))),
    "log1p": (_U(np.log1p), lambda x: 1.0 / (1 + x), "x",
              lambda mk, h, x: times(mk, h, scale(mk, power(mk, mk("_plus_scalar", x, scalar=1.0), -2.0),
                                                  -1.0))),
    "expm1": (_U(np.expm1), np.exp, "x", lambda mk, h, x: times(mk, h, mk("exp", x))),
    "sin": (_U(np.sin), np.cos, "x", lambda mk, h, x: times(mk, h, neg(mk, mk("sin", x)))),
    "cos": (_U(np.cos), lambda x: -np.sin(x), "x", lambda mk, h, x: times(mk, h, neg(mk, mk("cos", x)))),
    "tan": (_U(np.tan), lambda y: 1 + y * y, "y", lambda mk, h, y: times(mk, h, scale(mk, y, 2.0))),
    "arcsin": (_U(np.arcsin), lambda x: 1.0 / np.sqrt(1 - x * x), "x",
               lambda mk, h, x: times(mk, times(mk, h, x), power(mk, one_minus_x2(mk, x), -1.5))),
    "arccos": (_U(np.arccos), lambda x: -1.0 / np.sqrt(1 - x * x), "x",
               lambda mk, h, x: times(mk, times(mk, h, neg(mk, x)), power(mk, one_minus_x2(mk, x), -1.5))),
    "arctan": (_U(np.arctan), lambda x: 1.0 / (1 + x * x), "x",
               lambda mk, h, x: times(mk, times(mk, h, scale(mk, x, -2.0)),
                                      power(mk, x2_plus(mk, x, 1.0), -2.0))),
    "degrees": (_U(np.degrees), lambda x: np.full_like(x, 180 / np.pi), "x", _zeros),
    "radians": (_U(np.radians), lambda x: np.full_like(x, np.pi / 180), "x", _zeros),
    "sinh": (_U(np.sinh), np.cosh, "x", lambda mk, h, x: times(mk, h, mk("sinh", x))),
    "cosh": (_U(np.cosh), np.sinh, "x", lambda mk, h, x: times(mk, h, mk("cosh", x))),
    "arcsinh": (_U(np.arcsinh), lambda x: 1.0 / np.sqrt(x * x + 1), "x",
                lambda mk, h, x: times(mk, times(mk, h, neg(mk, x)), power(mk, x2_plus(mk, x, 1.0), -1.5))),
    "arccosh": (_U(np.arccosh), lambda x: 1.0 / np.sqrt(x * x - 1), "x",
                lambda mk, h, x: times(mk, times(mk, h, neg(mk, x)), power(mk, x2_plus(mk, x, -1.0), -1.5))),
    "arctanh": (_U(np.arctanh), lambda x: 1.0 / (1 - x * x), "x",
                lambda mk, h, x: times(mk, times(mk, h, scale(mk, x, 2.0)),
                                       power(mk, one_minus_x2(mk, x), -2.0))),
    "logical_not": (_logical_not, None, "x", None),
}

for _name, (_fn, _deriv, _use, _d2) in _UNARY.items():
    register_unary(_name, _fn, _deriv, _use, d2=_d2)
register_unary("negative", _U(np.negative), grad=_neg_grad, doc="negative(data) = -data.")


# ---------------------------------------------------------------------------------------------
# Binary operators (same shape here; broadcast.py registers the broadcasting forms)
# ---------------------------------------------------------------------------------------------

def _power(lhs, rhs, out):
    if out.dtype.kind == "f":
        return np.power(lhs, rhs, out=out)
    return np.copyto(out, np.power(lhs.astype(np.float64), rhs), casting="unsafe")


def _hypot(lhs, rhs, out):
    return np.copyto(out, np.hypot(lhs, rhs), casting="unsafe")


def _mod_partials(g, a, b):
    # MXNet's mod_grad / mod_rgrad are 0 for integer dtypes (floor(a / b) would divide by zero)
    if g.dtype.kind != "f":
        return np.zeros_like(g), np.zeros_like(g)
    return g, -g * np.floor(a / b)


# name: (forward fn(l, r, out), partials (g, l, r, y) -> (dl, dr)). Maximum/minimum send a tie's
# gradient to the left input, as MXNet's ge/lt (le/gt) masks do.
BINARY_MATH = {
    "add": (np.add, lambda g, a, b, y: (g, g)),
    "sub": (np.subtract, lambda g, a, b, y: (g, -g)),
    "mul": (np.multiply, lambda g, a, b, y: (g * b, g * a)),
    "div": (trunc_divide, lambda g, a, b, y: (g / b, -g * a / (b * b))),
    "power": (_power, lambda g, a, b, y: (g * b * np.power(a, b - 1), g * y * np.log(a))),
    "maximum": (np.maximum, lambda g, a, b, y: (g * (a >= b), g * (a < b))),
    "minimum": (np.minimum, lambda g, a, b, y: (g * (a <= b), g * (a > b))),
    "mod": (np.mod, lambda g, a, b, y: _mod_partials(g, a, b)),
    "hypot": (_hypot, lambda g, a, b, y: (g * a / y, g * b / y)),
}


def _cmp(u):
    return functools.partial(u, casting="unsafe")


# Comparisons and logic return 0/1 in the input dtype (MXNet semantics item 12).
COMPARISONS = {
    "equal": _cmp(np.equal), "not_equal": _cmp(np.not_equal), "greater": _cmp(np.greater),
    "greater_equal": _cmp(np.greater_equal), "lesser": _cmp(np.less),
    "lesser_equal": _cmp(np.less_equal), "logical_and": _cmp(np.logical_and),
    "logical_or": _cmp(np.logical_or), "logical_xor": _cmp(np.logical_xor),
}


def register_binary_backward(name: str, fn: Callable, partials: Callable,
                             ignore_inputs: Sequence[int] = ()) -> None:
    """``name(ograd, lhs, rhs) -> (lhs_grad, rhs_grad)``; broadcast gradients are summed back."""
    needs_y = fn in (_power, _hypot)

    def kernel(octx, params, inputs, outputs, req):
        g, lhs, rhs = inputs
        y = None
        if needs_y:
            y = np.empty(g.shape, dtype=g.dtype)
            fn(lhs, rhs, out=y)
        with np.errstate(divide="ignore", invalid="ignore"):
            dl, dr = partials(g, lhs, rhs, y)
        assign(outputs[0], req[0], sum_to_shape(np.broadcast_to(dl, g.shape), lhs.shape))
        assign(outputs[1], req[1], sum_to_shape(np.broadcast_to(dr, g.shape), rhs.shape))

    def shape(params, in_shapes):
        return list(in_shapes), [in_shapes[1], in_shapes[2]]

    def dtype(params, in_types):
        ins, outs = elemwise_type(params, in_types)
        return ins, outs * 2

    register(OpDef(name, kernel, arguments=("ograd", "lhs", "rhs"),
                   outputs=("lhs_grad", "rhs_grad"), infer_shape=shape, infer_type=dtype,
                   ignore_inputs=ignore_inputs))


def register_binary(name: str, fn: Callable, partials: Callable = None, *, aliases: Sequence[str] = (),
                    infer_shape: Callable = elemwise_shape, doc: str = "", grad: Callable = None,
                    backward: str = None, ignore_inputs: Sequence[int] = ()) -> OpDef:
    """Register ``name(lhs, rhs)`` computing ``fn(lhs, rhs, out=...)``.

    ``partials`` makes a ``backward`` op (default ``_backward_<name>``; ``ignore_inputs`` are its
    inputs read for their shape only); ``partials=None`` means a zero gradient unless ``grad``.
    """
    if grad is None and partials is not None:
        bname = backward or "_backward_" + name.lstrip("_")
        register_binary_backward(bname, fn, partials, ignore_inputs)

        def grad(node, ograds):
            n = make_node(bname, [ograds[0], *node.inputs], node.name + "_backward")
            return [NodeEntry(n, 0, 0), NodeEntry(n, 1, 0)]
    elif grad is None:
        grad = zero_grads
    return register(OpDef(name, make_kernel(fn), arguments=("lhs", "rhs"),
                          infer_shape=named_rule(name, infer_shape),
                          infer_type=named_rule(name, elemwise_type),
                          inplace=[(0, 0), (1, 0)], gradient=grad, aliases=aliases,
                          doc=doc or f"{name}(lhs, rhs), elementwise."))


def _add_grad(node, ograds):
    return [ograds[0], ograds[0]]


def _sub_grad(node, ograds):
    return [ograds[0], _neg_grad(node, ograds)[0]]


register_binary("elemwise_add", np.add, grad=_add_grad, aliases=("_add", "_plus", "_Plus"))
register_binary("elemwise_sub", np.subtract, grad=_sub_grad, aliases=("_sub", "_minus", "_Minus"))
register_binary("elemwise_mul", *BINARY_MATH["mul"], aliases=("_mul", "_Mul"), backward="_backward_mul")


def _backward_mul_gradient(node, ograds):
    """mul's second derivative: ``_backward_mul(og, a, b) = (og*b, og*a)``, so ``og`` gets
    ``h0*b + h1*a``, ``a`` gets ``h1*og`` and ``b`` gets ``h0*og`` (``h0``, ``h1``: head gradients
    of the two outputs)."""
    h0, h1 = output_grads(node, ograds)
    og, a, b = node.inputs
    mk = Builder(node)
    d_og = mk("elemwise_add", mk("elemwise_mul", h0, b), mk("elemwise_mul", h1, a))
    return [d_og, mk("elemwise_mul", h1, og), mk("elemwise_mul", h0, og)]


differentiable("_backward_mul", _backward_mul_gradient)
register_binary("elemwise_div", *BINARY_MATH["div"], aliases=("_div", "_Div"), backward="_backward_div")
for _name in ("power", "maximum", "minimum", "mod", "hypot"):
    register_binary(f"_{_name}", *BINARY_MATH[_name], aliases=(f"_{_name.capitalize()}",))
for _name, _fn in COMPARISONS.items():
    _alias = "_" + "_".join(w.capitalize() for w in _name.split("_"))
    register_binary(f"_{_name}", _fn, aliases=(_alias,))

