"""The ``Ftrl`` optimizer: FTRL-proximal (McMahan et al., 2013), one ``ftrl_update`` per step."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["Ftrl"]


@register
class Ftrl(Optimizer):
    """FTRL-proximal, for sparse linear models.

    The update (``g = clip(rescale_grad*grad)``)::

        z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr;   n += g^2
        w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd)  where |z| > lamda1, else 0

    Parameters
    ----------
    lamda1 : float
        L1 regularization coefficient.
    learning_rate : float
        Default 0.1.
    beta : float
        Per-coordinate learning-rate parameter.
    """

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context),   # z
                nd.zeros(weight.shape, weight.context))   # n

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        z, n = state
        nd.ftrl_update(weight, grad, z, n, out=weight, lr=self._get_lr(index), wd=self._get_wd(index),
                       lamda1=self.lamda1, beta=self.beta, rescale_grad=self.rescale_grad,
                       **self._clip())
