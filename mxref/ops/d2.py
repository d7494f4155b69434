"""Graph builders for second derivatives: the gradient of a unary ``_backward_<op>`` node.

A unary backward op computes ``b = og * d(z)`` from the head gradient ``og`` and ``z``, which is the
forward input ``x`` or output ``y``. Given the head gradient ``g`` of ``b``:

* ``db/dog = d(z)``, so ``og`` gets ``g * d(z)``: the same backward op, applied to ``g``;
* ``db/dz = og * d'(z)``, so ``z`` gets ``g * og * d'(z)``. When ``z`` is ``y``, the chain through
  ``y = f(x)`` is the forward op's own gradient, added by the gradient pass.

Each op's card gives ``d2(mk, h, z) = h * d'(z)`` (``h = g * og``) built from ordinary operators
with ``mk``, so the result can be differentiated once more. The unary math ops keep theirs in
``elemwise._UNARY``, the activations in ``activations.py``; ``second_order.py`` has the products'.
"""
from __future__ import annotations

from typing import Callable

from ..graph import NodeEntry, make_node

__all__ = ["Builder", "unary_gradient", "neg", "times", "scale", "power", "one_minus_x2", "x2_plus"]


class Builder:
    """Makes nodes named after the backward node they differentiate (``<name>_<op><k>``)."""

    def __init__(self, node):
        self.prefix, self.count = node.name, 0

    def __call__(self, op: str, *inputs: NodeEntry, **params) -> NodeEntry:
        self.count += 1
        # NOTE: string attrs, so parameters left out (``is_int``) take their defaults
        node = make_node(op, list(inputs), f"{self.prefix}_{op.lstrip('_')}{self.count}",
                         attrs={k: repr(v) for k, v in params.items()})
        return NodeEntry(node, 0, 0)


def unary_gradient(name: str, d2: Callable) -> Callable:
    """The gradient of ``_backward_<name>(og, z)`` from ``d2(mk, h, z) = h * d'(z)``."""
    def gradient(node, ograds):
        (g,), (og, z) = ograds, node.inputs
        mk = Builder(node)
        d_og = mk(f"_backward_{name}", g, z)
        return [d_og, d2(mk, mk("elemwise_mul", g, og), z)]
    return gradient


def neg(mk, e):
    return mk("negative", e)


def times(mk, h, e):
    return mk("elemwise_mul", h, e)


def scale(mk, e, s: float):
    return mk("_mul_scalar", e, scalar=s)


def power(mk, e, p: float):
    return mk("_power_scalar", e, scalar=p)


def one_minus_x2(mk, x):
    return mk("_rminus_scalar", mk("square", x), scalar=1.0)


def x2_plus(mk, x, c: float):
    return mk("_plus_scalar", mk("square", x), scalar=c)
