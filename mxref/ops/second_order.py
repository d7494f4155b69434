"""Gradients of the ``_backward_*`` operators, so ``autograd.grad(..., create_graph=True)`` can
differentiate a gradient again (second and higher derivatives). MXNet 1.9.1 has these for most
unary math ops; mxref also for the products (elemwise_mul, broadcast_mul) and the scalar powers.

A unary backward op computes ``b = og * d(z)`` from the head gradient ``og`` and ``z``, which is the
forward input ``x`` or output ``y`` (see ``elemwise._UNARY``). Given the head gradient ``g`` of ``b``:

* ``db/dog = d(z)``, so ``og`` gets ``g * d(z)``: the same backward op, applied to ``g``;
* ``db/dz = og * d'(z)``, so ``z`` gets ``g * og * d'(z)``. When ``z`` is ``y``, the chain through
  ``y = f(x)`` is the forward op's own gradient, added by the gradient pass.

Every gradient here is built from ordinary operators, so it can be differentiated once more. The
table ``_D2`` writes ``h * d'(z)`` (with ``h = g * og``) for each op; a missing op keeps no gradient.
"""
from __future__ import annotations

import math
from typing import Callable, Dict

from ..graph import NodeEntry, make_node
from . import broadcast, elemwise, scalar  # noqa: F401  (the ops below must be registered first)
from .elemwise import output_grads
from .registry import get

__all__ = ["differentiable_ops"]


class _Builder:
    """Makes nodes named after the backward node they differentiate (``<name>_<op><k>``)."""

    def __init__(self, node):
        self.prefix, self.count = node.name, 0

    def __call__(self, op: str, *inputs: NodeEntry, **params) -> NodeEntry:
        self.count += 1
        # NOTE: string attrs, so parameters left out (``is_int``) take their defaults
        node = make_node(op, list(inputs), f"{self.prefix}_{op.lstrip('_')}{self.count}",
                         attrs={k: repr(v) for k, v in params.items()})
        return NodeEntry(node, 0, 0)


def _neg(mk, e):
    return mk("negative", e)


def _times(mk, h, e):
    return mk("elemwise_mul", h, e)


def _scale(mk, e, s: float):
    return mk("_mul_scalar", e, scalar=s)


def _pow(mk, e, p: float):
    return mk("_power_scalar", e, scalar=p)


def _one_minus_x2(mk, x):
    return mk("_rminus_scalar", mk("square", x), scalar=1.0)


def _x2_plus(mk, x, c: float):
    return mk("_plus_scalar", mk("square", x), scalar=c)


_LN10, _LN2 = math.log(10.0), math.log(2.0)

# name: (mk, h, z) -> h * d'(z), where d(z) is the derivative the _backward_<name> kernel multiplies by
_D2: Dict[str, Callable] = {
    "sin": lambda mk, h, x: _times(mk, h, _neg(mk, mk("sin", x))),              # d = cos x
    "cos": lambda mk, h, x: _times(mk, h, _neg(mk, mk("cos", x))),              # d = -sin x
    "tan": lambda mk, h, y: _times(mk, h, _scale(mk, y, 2.0)),                  # d = 1 + y^2
    "sinh": lambda mk, h, x: _times(mk, h, mk("sinh", x)),                      # d = cosh x
    "cosh": lambda mk, h, x: _times(mk, h, mk("cosh", x)),                      # d = sinh x
    "tanh": lambda mk, h, y: _times(mk, h, _scale(mk, y, -2.0)),                # d = 1 - y^2
    "exp": lambda mk, h, y: h,                                                  # d = y
    "expm1": lambda mk, h, x: _times(mk, h, mk("exp", x)),                      # d = e^x
    "log": lambda mk, h, x: _times(mk, h, _scale(mk, _pow(mk, x, -2.0), -1.0)),  # d = 1/x
    "log10": lambda mk, h, x: _times(mk, h, _scale(mk, _pow(mk, x, -2.0), -1 / _LN10)),
    "log2": lambda mk, h, x: _times(mk, h, _scale(mk, _pow(mk, x, -2.0), -1 / _LN2)),
    "log1p": lambda mk, h, x: _times(mk, h, _scale(mk, _pow(mk, mk(
        "_plus_scalar", x, scalar=1.0), -2.0), -1.0)),                          # d = 1/(1+x)
    "reciprocal": lambda mk, h, x: _times(mk, h, _scale(mk, _pow(mk, x, -3.0), 2.0)),   # -1/x^2
    "square": lambda mk, h, x: _scale(mk, h, 2.0),                              # d = 2x
    "sqrt": lambda mk, h, y: _times(mk, h, _scale(mk, _pow(mk, y, -2.0), -0.5)),  # d = 1/(2y)
    "rsqrt": lambda mk, h, x: _times(mk, h, _scale(mk, _pow(mk, x, -2.5), 0.75)),  # -x^-1.5/2
    "cbrt": lambda mk, h, y: _times(mk, h, _scale(mk, _pow(mk, y, -3.0), -2 / 3)),  # 1/(3y^2)
    "rcbrt": lambda mk, h, x: _times(mk, h, _scale(mk, _pow(mk, x, -7 / 3), 4 / 9)),  # -x^(-4/3)/3
    "arcsin": lambda mk, h, x: _times(mk, _times(mk, h, x),
                                      _pow(mk, _one_minus_x2(mk, x), -1.5)),    # (1-x^2)^-1/2
    "arccos": lambda mk, h, x: _times(mk, _times(mk, h, _neg(mk, x)),
                                      _pow(mk, _one_minus_x2(mk, x), -1.5)),    # -(1-x^2)^-1/2
    "arctan": lambda mk, h, x: _times(mk, _times(mk, h, _scale(mk, x, -2.0)),
                                      _pow(mk, _x2_plus(mk, x, 1.0), -2.0)),    # 1/(1+x^2)
    "arcsinh": lambda mk, h, x: _times(mk, _times(mk, h, _neg(mk, x)),
                                       _pow(mk, _x2_plus(mk, x, 1.0), -1.5)),   # (x^2+1)^-1/2
    "arccosh": lambda mk, h, x: _times(mk, _times(mk, h, _neg(mk, x)),
                                       _pow(mk, _x2_plus(mk, x, -1.0), -1.5)),  # (x^2-1)^-1/2
    "arctanh": lambda mk, h, x: _times(mk, _times(mk, h, _scale(mk, x, 2.0)),
                                       _pow(mk, _one_minus_x2(mk, x), -2.0)),   # 1/(1-x^2)
    "sigmoid": lambda mk, h, y: _times(mk, h, mk("_rminus_scalar", _scale(mk, y, 2.0),
                                                 scalar=1.0)),                  # d = y(1 - y)
    "relu": lambda mk, h, y: mk("zeros_like", y),                               # d = [y > 0]
    "abs": lambda mk, h, x: mk("zeros_like", x),                                # d = sign x
    "degrees": lambda mk, h, x: mk("zeros_like", x),                            # d = 180/pi
    "radians": lambda mk, h, x: mk("zeros_like", x),                            # d = pi/180
}


def _unary_gradient(name: str, d2: Callable) -> Callable:
    def gradient(node, ograds):
        (g,), (og, z) = ograds, node.inputs
        mk = _Builder(node)
        d_og = mk(f"_backward_{name}", g, z)
        return [d_og, d2(mk, mk("elemwise_mul", g, og), z)]
    return gradient


def _backward_mul_gradient(node, ograds):
    """``_backward_mul(og, a, b) = (og*b, og*a)``: ``og`` gets ``h0*b + h1*a``, ``a`` gets
    ``h1*og`` and ``b`` gets ``h0*og`` (``h0``, ``h1``: head gradients of the two outputs)."""
    h0, h1 = output_grads(node, ograds)
    og, a, b = node.inputs
    mk = _Builder(node)
    d_og = mk("elemwise_add", mk("elemwise_mul", h0, b), mk("elemwise_mul", h1, a))
    return [d_og, mk("elemwise_mul", h1, og), mk("elemwise_mul", h0, og)]


def _backward_broadcast_mul_gradient(node, ograds):
    """As ``_backward_mul``'s, with broadcasting: products are ``broadcast_mul`` (they take the head
    gradient's shape) and the inputs' parts are summed back to their shapes (``_reduce_sum_like``)."""
    h0, h1 = output_grads(node, ograds)
    og, a, b = node.inputs
    mk = _Builder(node)
    d_og = mk("broadcast_add", mk("broadcast_mul", h0, b), mk("broadcast_mul", h1, a))
    return [d_og, mk("_reduce_sum_like", mk("broadcast_mul", h1, og), a),
            mk("_reduce_sum_like", mk("broadcast_mul", h0, og), b)]


def _scalar_gradient(name: str, d2: Callable) -> Callable:
    """Like ``_unary_gradient`` for ``_backward_<name>_scalar``, whose ``d`` depends on ``scalar``."""
    def gradient(node, ograds):
        (g,), (og, z) = ograds, node.inputs
        mk = _Builder(node)
        d_og = NodeEntry(make_node(node.op.name, [g, z], f"{node.name}_og", params=node.params), 0, 0)
        return [d_og, d2(mk, mk("elemwise_mul", g, og), z, node.params["scalar"])]
    return gradient


_SCALAR_D2: Dict[str, Callable] = {
    # d = s x^(s-1), d' = s (s-1) x^(s-2)
    "_backward_power_scalar": lambda mk, h, x, s: _times(mk, h, _scale(mk, _pow(mk, x, s - 2.0),
                                                                       s * (s - 1.0))),
    # s / x: d = -s/x^2, d' = 2s/x^3
    "_backward_rdiv_scalar": lambda mk, h, x, s: _times(mk, h, _scale(mk, _pow(mk, x, -3.0), 2.0 * s)),
    # s ** x (z = y): d = y ln s, d' = ln s
    "_backward_rpower_scalar": lambda mk, h, y, s: _scale(mk, h, math.log(s)),
}


def differentiable_ops() -> list:
    """Names of the backward ops this module makes differentiable."""
    return [f"_backward_{n}" for n in _D2] + ["_backward_mul", "_backward_broadcast_mul"] + list(_SCALAR_D2)


for _name, _d2 in _D2.items():
    get(f"_backward_{_name}").gradient = _unary_gradient(_name, _d2)
get("_backward_mul").gradient = _backward_mul_gradient
get("_backward_broadcast_mul").gradient = _backward_broadcast_mul_gradient
for _name, _d2 in _SCALAR_D2.items():
    get(_name).gradient = _scalar_gradient(_name, _d2)
