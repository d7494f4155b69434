"""Adam and LAMB optimizers.

``Adam`` adds weight decay before clipping and folds the bias correction into the learning rate
(``docs/mxnet-semantics.md`` item 8), one ``adam_update`` per step::

    lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    g = clip(rescale_grad*grad + wd*w);  m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g^2
    w -= lr_t * m / (sqrt(v) + epsilon)

``LAMB`` scales an Adam-like direction by the trust ratio ``norm(w) / norm(direction)``:
``lamb_update_phase1`` (direction), two ``norm``s, ``lamb_update_phase2`` (the step).
"""
from __future__ import annotations

import math

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["Adam", "LAMB"]


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014) with MXNet's placement of weight decay and bias correction.

    Parameters
    ----------
    learning_rate : float
        Default 0.001.
    beta1, beta2 : float
        Decay rates of the first and second moment estimates.
    epsilon : float
        Added to ``sqrt(v)`` to avoid division by zero.
    lazy_update : bool
        Row-sparse lazy updates in MXNet; inert on mxref's dense arrays.
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype),   # mean
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype))   # variance

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1. - self.beta2 ** t) / (1. - self.beta1 ** t)
        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lazy_update=self.lazy_update, lr=lr, wd=wd,
                       beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                       rescale_grad=self.rescale_grad, **self._clip())


@register
class LAMB(Optimizer):
    """LAMB (You et al., 2019): layer-wise adaptive moments for large-batch training.

    Parameters
    ----------
    learning_rate : float
        Default 0.001.
    beta1, beta2, epsilon : float
        As in Adam (``epsilon`` defaults to 1e-6).
    lower_bound, upper_bound : float, optional
        Clamp ``norm(w)`` in the trust ratio.
    bias_correction : bool
        Divide the moments by ``1 - beta^t``.
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound=None, upper_bound=None, bias_correction: bool = True,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype),
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype))

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        mean, var = state
        g = nd.lamb_update_phase1(weight, grad, mean, var, t=self._index_update_count[index],
                                  beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                                  bias_correction=self.bias_correction, wd=wd,
                                  rescale_grad=self.rescale_grad, **self._clip())
        bounds = {}
        if self.lower_bound:
            bounds["lower_bound"] = self.lower_bound
        if self.upper_bound:
            bounds["upper_bound"] = self.upper_bound
        nd.lamb_update_phase2(weight, g, nd.norm(weight), nd.norm(g), lr=lr, out=weight, **bounds)
