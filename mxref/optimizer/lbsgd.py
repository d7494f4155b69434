"""``LBSGD``: large-batch SGD with a learning-rate warmup and gradient accumulation (as MXNet 1.9.1).

It emulates a batch ``batch_scale`` times larger: each index accumulates its gradients, and only
every ``batch_scale``-th call makes an SGD step (momentum, multi-precision) with their mean, at
``lr * lbmult``; the calls in between leave the weight as it is (an ``sgd_update`` with ``lr=0``).
``lbmult`` warms up from 1 to ``batch_scale`` over ``warmup_epochs * updates_per_epoch``
accumulated steps, by ``warmup_strategy``::

    linear:  1 + (batch_scale-1) * n/N        power2:  1 + (batch_scale-1) * (n/N)^2
    sqrt:    1 + (batch_scale-1) * sqrt(n/N)
    lars:    clip(sqrt(|w|^2 / (|g|^2 + wd*|w|^2 + 1e-18)), 0.01, 100)

``begin_epoch`` starts the accumulated count at ``begin_epoch * updates_per_epoch``.
"""
from __future__ import annotations

import logging
import math
import warnings

import numpy

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["LBSGD"]


@register
class LBSGD(Optimizer):
    """The Large Batch SGD optimizer (``mx.optimizer.LBSGD``).

    Parameters
    ----------
    momentum : float
        The momentum value.
    multi_precision : bool
        Keep a float32 master copy of float16 weights.
    warmup_strategy : str
        ``'linear'``, ``'power2'``, ``'sqrt'`` or ``'lars'`` (anything else: no warmup).
    warmup_epochs : int
        Epochs of warmup.
    batch_scale : int
        How many calls make one large batch (batch size times the number of workers).
    updates_per_epoch : int
        Updates per epoch, for the warmup length.
    begin_epoch : int
        The epoch to start from.
    num_epochs : int
        Kept as MXNet does (unused by the update).
    """

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False, warmup_strategy: str = "linear",
                 warmup_epochs: int = 5, batch_scale: int = 1, updates_per_epoch: int = 32,
                 begin_epoch: int = 0, num_epochs: int = 60, **kwargs):
        super().__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)",
                     batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32 = weight.astype(numpy.float32)
            mom = nd.zeros(weight.shape, weight.context, dtype=numpy.float32) if self.momentum else None
            return (mom, weight32)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the SGD optimizer",
                          stacklevel=2)
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype) if self.momentum else None

    def _get_lbmult(self, nup) -> float:
        """The warmup multiplier after ``nup`` accumulated updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        frac = {"linear": nup / nwup, "power2": (nup * nup) / (nwup * nwup),
                "sqrt": math.sqrt(float(nup) / nwup)}.get(self.warmup_strategy)
        return 1.0 if frac is None else 1.0 + (maxmult - 1) * frac

    def _l2norm(self, v) -> float:
        """The sum of squares (MXNet's name for it here)."""
        return float((v * v).asnumpy().sum())

    def _get_lars(self, weight, g, wd) -> float:
        weight2, grad2 = self._l2norm(weight), self._l2norm(g)
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return min(max(lars, 0.01), 100)

    def _cumulate_gradient(self, grad, index) -> dict:
        cgrad = self.cumgrads.get(index, {})
        if cgrad and cgrad["num_cums"] > 0:
            cgrad = {"cum_grad": cgrad["cum_grad"] + grad, "num_cums": cgrad["num_cums"] + 1}
        else:
            cgrad = {"cum_grad": grad, "num_cums": self.init_updates + 1}
        self.cumgrads[index] = cgrad
        return cgrad

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            nd.sgd_update(weight, grad, out=weight, lr=0.0, wd=wd)
            return
        grad = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lr *= self._get_lars(weight, grad, wd)
        else:
            lr *= self._get_lbmult(cgrad["num_cums"])
        kw = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kw["momentum"] = self.momentum
        kw.update(self._clip())
        if not isinstance(state, (list, tuple)):
            if state is not None:
                nd.sgd_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kw)
            else:
                nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kw)
        elif state[0] is not None:
            nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd, **kw)
        else:
            nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kw)
        self.cumgrads[index]["cum_grad"] = 0     # the next large batch starts afresh
