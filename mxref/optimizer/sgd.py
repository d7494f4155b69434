"""SGD-family optimizers: ``SGD`` (with momentum), ``NAG`` (Nesterov) and ``Signum`` / signSGD.

Each update is one engine operation (``sgd_update``, ``sgd_mom_update``, ``nag_mom_update``,
``signsgd_update``, ``signum_update`` or an ``mp_*`` twin), so ``update`` returns at once; SGD
updates a list of weights with one fused ``multi_*sgd*`` operation.
SGD applies rescale, then clip, then weight decay outside the clip (``docs/mxnet-semantics.md`` item 7)::

    mom = momentum*mom - lr*(clip(rescale_grad*grad) + wd*w);   w += mom
"""
from __future__ import annotations

import warnings

import numpy

from .. import ndarray as nd
from ..base import env_int
from .optimizer import Optimizer, register

__all__ = ["SGD", "NAG", "Signum", "ccSGD"]


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


def _aggregation_size() -> int:
    """How many weights one fused update takes (``MXNET_OPTIMIZER_AGGREGATION_SIZE``, MXNet's 4)."""
    return env_int("MXNET_OPTIMIZER_AGGREGATION_SIZE", 4)


def _flatten(groups) -> list:
    return [a for group in groups for a in group]


class _GroupedSGDMixin:
    """The list-of-weights path SGD and LARS share: ``update``/``update_multi_precision`` take one
    weight or a group; a dense group is one fused operator, anything else one operator per weight."""

    def update(self, index, weight, grad, state) -> None:
        self._update_impl(index, weight, grad, state, False)

    def update_multi_precision(self, index, weight, grad, state) -> None:
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        self._update_impl(index, weight, grad, state,
                          self.multi_precision and first.dtype == numpy.float16)

    def _fused_sgd(self, weights, grads, states, kw, multi_precision: bool, rates=None) -> None:
        """One fused update of ``weights``: ``multi_*`` with ``lrs``/``wds`` in ``kw``, or with
        ``rates = [lrs, wds]`` as arrays, the ``preloaded_multi_*`` twin (LARS's computed rates)."""
        pre = "preloaded_" if rates is not None else ""
        rates = rates or []
        fused = dict(out=list(weights), num_weights=len(weights), **kw)
        if not multi_precision and self.momentum > 0:
            getattr(nd, pre + "multi_sgd_mom_update")(*_flatten(zip(weights, grads, states)), *rates, **fused)
        elif not multi_precision:
            getattr(nd, pre + "multi_sgd_update")(*_flatten(zip(weights, grads)), *rates, **fused)
        elif self.momentum > 0:
            getattr(nd, pre + "multi_mp_sgd_mom_update")(*_flatten(zip(weights, grads, *zip(*states))),
                                                          *rates, **fused)
        else:
            getattr(nd, pre + "multi_mp_sgd_update")(*_flatten(zip(weights, grads, [x[1] for x in states])),
                                                      *rates, **fused)

    def _single_sgd(self, weights, grads, states, lrs, wds, kw, multi_precision: bool) -> None:
        """One ``sgd_*update`` (or ``mp_`` twin) per weight."""
        for weight, grad, state, lr, wd in zip(weights, grads, states, lrs, wds):
            one = dict(lr=lr, wd=wd, **kw)
            if not multi_precision:
                if state is not None:
                    nd.sgd_mom_update(weight, grad, state, out=weight, lazy_update=self.lazy_update, **one)
                else:
                    nd.sgd_update(weight, grad, out=weight, lazy_update=self.lazy_update, **one)
            elif state[0] is not None:
                nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight, **one)
            else:
                nd.mp_sgd_update(weight, grad, state[1], out=weight, **one)


@register
class SGD(_GroupedSGDMixin, _MomentumMixin, Optimizer):
    """Stochastic gradient descent with optional momentum (``mx.optimizer.SGD``).

    Given lists of indices, weights, gradients and states (the ``Updater`` groups up to
    ``aggregate_num`` same-dtype weights, from ``MXNET_OPTIMIZER_AGGREGATION_SIZE``, default 4),
    the whole group is one fused operator (``multi_sgd_update``, ``multi_sgd_mom_update`` or a
    ``multi_mp_*`` twin) with per-weight learning rates and weight decays; it gives the same bits
    as one single-tensor update per weight. Row-sparse weights or gradients take the single path.

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
        self.aggregate_num = _aggregation_size()

    def _update_impl(self, indices, weights, grads, states, multi_precision: bool = False) -> None:
        if not isinstance(indices, (tuple, list)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        aggregate = all(w.stype == "default" and g.stype == "default" for w, g in zip(weights, grads))
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kw = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kw["momentum"] = self.momentum
        kw.update(self._clip())
        if aggregate:
            # Tuples, not lists: hashable parameters let invoke reuse the parsed parameters and the
            # shape plan of the last call (a list makes every call parse and infer again).
            rates = dict(lrs=tuple(lrs), wds=tuple(wds), **kw)
            self._fused_sgd(weights, grads, states, rates, multi_precision)
        else:
            self._single_sgd(weights, grads, states, lrs, wds, kw, multi_precision)


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


@register
class ccSGD(SGD):  # noqa: N801 - MXNet's name
    """[DEPRECATED] Same as :class:`SGD`; kept, as MXNet keeps it, for old scripts."""
