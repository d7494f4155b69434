"""``SGLD``: stochastic gradient Langevin dynamics (Welling & Teh, 2011; MXNet cites Patterson & Teh).

A gradient step of half the learning rate plus Gaussian noise of variance ``lr``, so the weights
sample the posterior instead of settling at a mode::

    g = clip(rescale_grad*grad, clip_gradient)
    w += -lr/2 * (g + wd*w) + N(0, sqrt(lr))

The noise comes from ``mx.random.normal`` (the engine's random resource), so ``mx.random.seed``
makes runs repeatable.
"""
from __future__ import annotations

import math

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["SGLD"]


@register
class SGLD(Optimizer):
    """Stochastic Gradient (Riemannian) Langevin Dynamics (``mx.optimizer.SGLD``); no state."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        weight[:] += -lr / 2 * (grad + wd * weight)
        weight[:] += nd.random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                                      ctx=weight.context)
