"""SGD-family optimizers: ``SGD`` (with momentum), ``NAG`` (Nesterov) and ``Signum`` / signSGD.

Each update is one engine operation (``sgd_update``, ``sgd_mom_update``, ``nag_mom_update``,
``signsgd_update``, ``signum_update`` or an ``mp_*`` twin), so ``update`` returns at once.
SGD applies rescale, then clip, then weight decay outside the clip (``docs/mxnet-semantics.md`` item 7)::

    mom = momentum*mom - lr*(clip(rescale_grad*grad) + wd*w);   w += mom
"""
from __future__ import annotations

import warnings

import numpy

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["SGD", "NAG", "Signum"]


class _MomentumMixin:
    """Momentum state and the float32-master-copy layout ``(momentum, weight32)`` of SGD and NAG."""

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32 = weight.astype(numpy.float32)
            return (self.create_state(index, weight32), weight32)
        if weight.dtype == numpy.float16:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          f"convergence. Consider using multi_precision=True option of the "
                          f"{type(self).__name__} optimizer", stacklevel=2)
        return self.create_state(index, weight)

    def _kwargs(self, index) -> dict:
        self._update_count(index)
        kw = {"lr": self._get_lr(index), "wd": self._get_wd(index), "rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kw["momentum"] = self.momentum
        kw.update(self._clip())
        return kw

    def update(self, index, weight, grad, state) -> None:
        self._step(index, weight, grad, state, False)

    def update_multi_precision(self, index, weight, grad, state) -> None:
        mp = self.multi_precision and weight.dtype == numpy.float16 and isinstance(state, tuple)
        self._step(index, weight, grad, state, mp)


@register
class SGD(_MomentumMixin, Optimizer):
    """Stochastic gradient descent with optional momentum (``mx.optimizer.SGD``).

    Parameters
    ----------
    momentum : float
        Momentum; 0 (the default) keeps no state.
    lazy_update : bool
        Row-sparse lazy updates in MXNet; mxref arrays are dense, so it only travels to the op.
    **kwargs
        See :class:`Optimizer` (``learning_rate``, ``wd``, ``rescale_grad``, ``clip_gradient``, ...).
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def _step(self, index, weight, grad, state, mp: bool) -> None:
        kw = self._kwargs(index)
        if not mp:
            if state is not None:
                nd.sgd_mom_update(weight, grad, state, out=weight, lazy_update=self.lazy_update, **kw)
            else:
                nd.sgd_update(weight, grad, out=weight, lazy_update=self.lazy_update, **kw)
        elif state[0] is not None:
            nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight, **kw)
        else:
            nd.mp_sgd_update(weight, grad, state[1], out=weight, **kw)


@register
class NAG(_MomentumMixin, Optimizer):
    """Nesterov accelerated gradient (``nag_mom_update``); without momentum it is plain SGD."""

    def __init__(self, momentum: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def _step(self, index, weight, grad, state, mp: bool) -> None:
        kw = self._kwargs(index)
        if not mp:
            if state is not None:
                nd.nag_mom_update(weight, grad, state, out=weight, **kw)
            else:
                nd.sgd_update(weight, grad, out=weight, **kw)
        elif state[0] is not None:
            nd.mp_nag_mom_update(weight, grad, state[0], state[1], out=weight, **kw)
        else:
            nd.mp_sgd_update(weight, grad, state[1], out=weight, **kw)


@register
class Signum(Optimizer):
    """Signum: the sign of a momentum average of gradients; with ``momentum=0``, signSGD.

    ``wd_lh`` is decoupled weight decay applied to the weight directly (Loshchilov & Hutter).
    """

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        kw = {"lr": self._get_lr(index), "wd": self._get_wd(index), "rescale_grad": self.rescale_grad}
        kw.update(self._clip())
        if state is not None:
            if self.wd_lh:
                kw["wd_lh"] = self.wd_lh
            nd.signum_update(weight, grad, state, out=weight, momentum=self.momentum, **kw)
        else:
            nd.signsgd_update(weight, grad, out=weight, **kw)
