"""Adam and LAMB optimizers.

``Adam`` adds weight decay before clipping and folds the bias correction into the learning rate
(``docs/mxnet-semantics.md`` item 8), one ``adam_update`` per step::

    lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    g = clip(rescale_grad*grad + wd*w);  m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g^2
    w -= lr_t * m / (sqrt(v) + epsilon)

``LAMB`` scales an Adam-like direction by the trust ratio ``norm(w) / norm(direction)``:
``lamb_update_phase1`` (direction), two ``norm``s, ``lamb_update_phase2`` (the step) for one
weight; lists of weights (the ``Updater`` groups up to ``aggregate_num``, 45 by default) take one
``_multi_lamb_update`` (``_multi_mp_lamb_update`` for float16 with ``multi_precision``) per group.
"""
from __future__ import annotations

import math

import numpy

from .. import ndarray as nd
from ..base import env_int
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
        return self._zero_states(weight, 2)     # mean, variance

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
        # MXNet's LAMB groups up to 45 weights per fused op (the variable caps it at 45)
        self.aggregate_num = max(1, min(45, env_int("MXNET_OPTIMIZER_AGGREGATION_SIZE", 45)))

    def create_state(self, index, weight):
        return self._zero_states(weight, 2)     # mean, variance

    def update(self, index, weight, grad, state) -> None:
        if isinstance(index, (tuple, list)):
            self._update_fused(index, weight, grad, state, False)
            return
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        mean, var = state
        g = nd.lamb_update_phase1(weight, grad, mean, var, t=self._index_update_count[index],
                                  beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                                  bias_correction=self.bias_correction, wd=wd,
                                  rescale_grad=self.rescale_grad, **self._clip())
        nd.lamb_update_phase2(weight, g, nd.norm(weight), nd.norm(g), lr=lr, out=weight, **self._bounds())

    def update_multi_precision(self, index, weight, grad, state) -> None:
        if not isinstance(index, (tuple, list)):
            if self.multi_precision and weight.dtype == numpy.float16:
                self._update_mp(index, weight, grad, state)
            else:
                super().update_multi_precision(index, weight, grad, state)
        elif len(index) == 1 and self.aggregate_num <= 1:
            self.update_multi_precision(index[0], weight[0], grad[0], state[0])
        else:
            self._update_fused(index, weight, grad, state,
                               self.multi_precision and weight[0].dtype == numpy.float16)

    def _update_mp(self, index, weight, grad, state) -> None:
        """One float16 weight through its float32 master copy: ``mp_lamb_update_phase1/2``."""
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        weight32, (mean, var) = state
        g = nd.mp_lamb_update_phase1(weight, grad, mean, var, weight32, t=self._index_update_count[index],
                                     beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                                     bias_correction=self.bias_correction, wd=wd,
                                     rescale_grad=self.rescale_grad, **self._clip())
        nd.mp_lamb_update_phase2(weight, g, nd.norm(weight32), nd.norm(g), weight32, lr=lr, out=weight,
                                 **self._bounds())

    def _bounds(self) -> dict:
        bounds = {}
        if self.lower_bound:
            bounds["lower_bound"] = self.lower_bound
        if self.upper_bound:
            bounds["upper_bound"] = self.upper_bound
        return bounds

    def _update_fused(self, indices, weights, grads, states, multi_precision: bool) -> None:
        """Lists of weights: ``_multi_lamb_update`` (or ``_multi_mp_lamb_update`` on float32 master
        copies) per chunk of ``aggregate_num``, with each weight's own step count, lr and wd."""
        self._update_count(list(indices))
        steps = [self._index_update_count[i] for i in indices]
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kw = dict(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                  bias_correction=self.bias_correction, rescale_grad=self.rescale_grad,
                  **self._clip(), **self._bounds())
        size = max(1, self.aggregate_num)
        for lo in range(0, len(weights), size):
            hi = min(lo + size, len(weights))
            ws, gs = list(weights[lo:hi]), grads[lo:hi]
            common = dict(out=ws, num_tensors=hi - lo, step_count=steps[lo:hi],
                          learning_rates=lrs[lo:hi], wds=wds[lo:hi], **kw)
            if multi_precision:        # state: (weight32, (mean, var))
                groups = [(w, g, s[1][0], s[1][1], s[0]) for w, g, s in zip(ws, gs, states[lo:hi])]
                nd._internal._multi_mp_lamb_update(*[a for grp in groups for a in grp], **common)
            else:
                groups = [(w, g, s[0], s[1]) for w, g, s in zip(ws, gs, states[lo:hi])]
                nd._internal._multi_lamb_update(*[a for grp in groups for a in grp], **common)
