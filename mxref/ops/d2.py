"""Graph builders for second derivatives: the gradient of a unary ``_backward_<op>`` node.

A unary backward op computes ``b = og * d(z)`` from the head gradient ``og`` and ``z``, which is the
forward input ``x`` or output ``y``. Given the head gradient ``g`` of ``b``:

* ``db/dog = d(z)``, so ``og`` gets ``g * d(z)``: the same backward op, applied to ``g``;
* ``db/dz = og * d'(z)``, so ``z`` gets ``g * og * d'(z)``. When ``z`` is ``y``, the chain through
  ``y = f(x)`` is the forward op's own gradient, added by the gradient pass.

Each op's card gives ``d2(mk, h, z) = h * d'(z)`` (``h = g * og``) built from ordinary operators
with ``mk``, so the result can be differentiated once more. Each op keeps its own with the rest of
its math: the unary math ops in their rows of ``elemwise._UNARY``, the activations in their cards
(``activations.py``, also for ``Activation``), the products beside ``elemwise_mul`` and
``broadcast_mul``, the scalar powers in ``scalar.py``; ``differentiable`` lists each.
"""
from __future__ import annotations

from typing import Callable, List

from ..graph import NodeEntry, make_node
from .registry import get

__all__ = ["Builder", "SECOND_ORDER", "differentiable", "unary_gradient", "scalar_gradient", "neg",
           "times", "scale", "power", "one_minus_x2", "x2_plus"]

SECOND_ORDER: List[str] = []     # the backward ops given a gradient (``second_order.differentiable_ops``)


def differentiable(op_name: str, gradient: Callable) -> None:
    """Give the backward op ``op_name`` a gradient (its second derivative) and list it."""
    get(op_name).gradient = gradient
    SECOND_ORDER.append(op_name)


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


def scalar_gradient(d2: Callable) -> Callable:
    """Like ``unary_gradient`` for ``_backward_<name>_scalar(og, z)``, whose ``d`` depends on the
    ``scalar`` parameter: ``d2(mk, h, z, scalar) = h * d'(z)``."""
    def gradient(node, ograds):
        (g,), (og, z) = ograds, node.inputs
        mk = Builder(node)
        d_og = NodeEntry(make_node(node.op.name, [g, z], f"{node.name}_og", params=node.params), 0, 0)
        return [d_og, d2(mk, mk("elemwise_mul", g, og), z, node.params["scalar"])]
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
