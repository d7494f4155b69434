"""``DCASGD``: delay-compensated asynchronous SGD (Zheng et al., 2017, arXiv:1609.08326).

With ``dist_async`` a worker's gradient was computed on weights ``w_prev`` that other workers
have since moved to ``w``. DCASGD corrects the stale gradient with a cheap diagonal estimate of
the Hessian, ``lamda * g * g``, times the drift ``w - w_prev``::

    g = clip(rescale_grad*grad, clip_gradient)
    step = -lr * (g + wd*w + lamda * g*g * (w - w_prev))
    mom = momentum*mom + step    (or step itself without momentum)
    w_prev = w;   w += mom

On a parameter server the optimizer runs on the server (``kv.set_optimizer``), so ``w_prev`` is
the weight the previous update of that key left, which is what the worker that pushes next most
likely pulled. ``docs/architecture/kvstore_dist.md`` says when to use it.

NOTE: MXNet 1.9.1 tests ``if mom:``, the truth value of the momentum array, which raises for a
multi-element array and, for a one-element zero array, takes the no-momentum branch and fails its
assertion: with ``momentum > 0`` its DCASGD never runs. This one tests ``mom is not None`` and
applies the momentum formula above; with ``momentum=0`` (MXNet's default) the two agree.
"""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["DCASGD"]


@register
class DCASGD(Optimizer):
    """The DCASGD optimizer (``mx.optimizer.DCASGD``).

    Parameters
    ----------
    momentum : float
        The momentum value.
    lamda : float
        Scale of the delay compensation term (MXNet's spelling).
    """

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = None if self.momentum == 0.0 else nd.zeros(weight.shape, weight.context, dtype=weight.dtype)
        return (mom, weight.copy())   # (momentum, previous weight)

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        mom, previous_weight = state
        step = -lr * (grad + wd * weight + self.lamda * grad * grad * (weight - previous_weight))
        if mom is not None:
            mom[:] *= self.momentum
            mom[:] += step
        else:
            mom = step
        previous_weight[:] = weight
        weight[:] += mom
