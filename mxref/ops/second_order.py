"""Gradients of the ``_backward_*`` operators of the products and the scalar powers, so
``autograd.grad(..., create_graph=True)`` can differentiate a gradient again (second and higher
derivatives). MXNet 1.9.1 has these for most unary math ops; mxref also for the products
(elemwise_mul, broadcast_mul) and the scalar powers.

The unary ops' second derivatives live with the rest of their math: ``elemwise._UNARY`` (one row
per op) and the activation cards (``activations.py``); ``d2.py`` explains the construction and
builds the nodes. Every gradient here is built from ordinary operators, so it can be
differentiated once more.
"""
from __future__ import annotations

import math
from typing import Callable, Dict

from ..graph import NodeEntry, make_node
from . import activations, broadcast, elemwise, scalar  # noqa: F401  (the ops below must be registered first)
from .d2 import Builder, power, scale, times
from .elemwise import output_grads
from .registry import get

__all__ = ["differentiable_ops"]


def _backward_mul_gradient(node, ograds):
    """``_backward_mul(og, a, b) = (og*b, og*a)``: ``og`` gets ``h0*b + h1*a``, ``a`` gets
    ``h1*og`` and ``b`` gets ``h0*og`` (``h0``, ``h1``: head gradients of the two outputs)."""
    h0, h1 = output_grads(node, ograds)
    og, a, b = node.inputs
    mk = Builder(node)
    d_og = mk("elemwise_add", mk("elemwise_mul", h0, b), mk("elemwise_mul", h1, a))
    return [d_og, mk("elemwise_mul", h1, og), mk("elemwise_mul", h0, og)]


def _backward_broadcast_mul_gradient(node, ograds):
    """As ``_backward_mul``'s, with broadcasting: products are ``broadcast_mul`` (they take the head
    gradient's shape) and the inputs' parts are summed back to their shapes (``_reduce_sum_like``)."""
    h0, h1 = output_grads(node, ograds)
    og, a, b = node.inputs
    mk = Builder(node)
    d_og = mk("broadcast_add", mk("broadcast_mul", h0, b), mk("broadcast_mul", h1, a))
    return [d_og, mk("_reduce_sum_like", mk("broadcast_mul", h1, og), a),
            mk("_reduce_sum_like", mk("broadcast_mul", h0, og), b)]


def _scalar_gradient(name: str, d2: Callable) -> Callable:
    """Like ``d2.unary_gradient`` for ``_backward_<name>_scalar``, whose ``d`` depends on ``scalar``."""
    def gradient(node, ograds):
        (g,), (og, z) = ograds, node.inputs
        mk = Builder(node)
        d_og = NodeEntry(make_node(node.op.name, [g, z], f"{node.name}_og", params=node.params), 0, 0)
        return [d_og, d2(mk, mk("elemwise_mul", g, og), z, node.params["scalar"])]
    return gradient


_SCALAR_D2: Dict[str, Callable] = {
    # d = s x^(s-1), d' = s (s-1) x^(s-2)
    "_backward_power_scalar": lambda mk, h, x, s: times(mk, h, scale(mk, power(mk, x, s - 2.0),
                                                                     s * (s - 1.0))),
    # s / x: d = -s/x^2, d' = 2s/x^3
    "_backward_rdiv_scalar": lambda mk, h, x, s: times(mk, h, scale(mk, power(mk, x, -3.0), 2.0 * s)),
    # s ** x (z = y): d = y ln s, d' = ln s
    "_backward_rpower_scalar": lambda mk, h, y, s: scale(mk, h, math.log(s)),
}


def differentiable_ops() -> list:
    """Names of the backward ops that have a gradient: the unary ones (from their rows and cards)
    and this module's."""
    return list(elemwise.SECOND_ORDER) + ["_backward_mul", "_backward_broadcast_mul"] + list(_SCALAR_D2)


get("_backward_mul").gradient = _backward_mul_gradient
get("_backward_broadcast_mul").gradient = _backward_broadcast_mul_gradient
for _name, _d2 in _SCALAR_D2.items():
    get(_name).gradient = _scalar_gradient(_name, _d2)
