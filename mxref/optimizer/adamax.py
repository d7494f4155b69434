"""``Adamax``: Adam with the infinity norm (Kingma & Ba, 2014, section 7).

MXNet 1.9.1 writes it as a few NDArray operations; so does this (weight decay inside the clip)::

    g = clip(rescale_grad*grad + wd*w, clip_gradient)
    m = beta1*m + (1-beta1)*g;   u = max(beta2*u, |g|)
    w -= lr / (1 - beta1^t) * m / u
"""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["Adamax"]


@register
class Adamax(Optimizer):
    """The AdaMax optimizer (``mx.optimizer.Adamax``).

    Parameters
    ----------
    learning_rate : float
        Default 0.002.
    beta1 : float
        Exponential decay rate for the first moment estimates.
    beta2 : float
        Exponential decay rate of the infinity norm ``u``.
    """

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return self._zero_states(weight, 2)     # m, u

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        lr /= 1. - self.beta1 ** self._index_update_count[index]
        grad = grad * self.rescale_grad + wd * weight
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        m_t, u_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        u_t[:] = nd.maximum(self.beta2 * u_t, nd.abs(grad))
        weight[:] -= lr * m_t / u_t
