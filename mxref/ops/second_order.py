"""Which backward operators have a gradient of their own, so ``autograd.grad(...,
create_graph=True)`` can differentiate a gradient again (second and higher derivatives).

Each second derivative lives with the rest of its operator's math (see ``d2.py`` for how they
are built): the unary math ops' in their rows of ``elemwise._UNARY``, the activations' in their
cards (``activations.py``, shared by ``Activation``), ``_backward_mul``'s beside ``elemwise_mul``,
``_backward_broadcast_mul``'s in ``broadcast.py``, the scalar powers' in ``scalar.py``. MXNet
1.9.1 has most of the unary ones, but not the products or the scalar powers.
"""
from __future__ import annotations

from . import activations, broadcast, elemwise, scalar  # noqa: F401  (they register the gradients)
from .d2 import SECOND_ORDER
from .nn import activation  # noqa: F401

__all__ = ["differentiable_ops"]


def differentiable_ops() -> list:
    """Names of the backward ops that have a gradient, in the order they were given one."""
    return list(SECOND_ORDER)
