"""``LARS``: layer-wise adaptive rate scaling (You, Gitman & Ginsburg, 2017) over momentum SGD.

Each weight's learning rate is scaled by its trust ratio, except for biases and BatchNorm's
``gamma``/``beta`` (names ending so), which keep theirs::

    lr_i = lr * lr_mult_i * eta * |w_i| / (|g_i| * rescale_grad + wd_i * |w_i| + eps)   (|w_i|, |g_i| > 0)

then an SGD step (with momentum, multi-precision) at ``lr_i``. Dense weights go through fused
operators, as in MXNet: ``multi_sum_sq`` (the squared norms of all weights, then all gradients),
``multi_lars`` (the scaled rates, written over the rate array) and ``preloaded_multi_sgd_*`` per
chunk of ``aggregate_num`` (``MXNET_OPTIMIZER_AGGREGATION_SIZE``, default 4), reading the rates
from that array. With ``momentum_correction`` the momentum is multiplied by
``current_lr / last_lr`` when a scheduler changes the rate (Goyal et al., 2017). Only ``*_weight``
parameters get weight decay by default (not ``*_gamma``, unlike the other optimizers).
"""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register
from .sgd import _aggregation_size, _GroupedSGDMixin, _MomentumMixin

__all__ = ["LARS"]

_NO_LARS = ("gamma", "beta", "bias")


@register
class LARS(_GroupedSGDMixin, _MomentumMixin, Optimizer):
    """The LARS optimizer (``mx.optimizer.LARS``).

    Parameters
    ----------
    momentum : float
        The momentum value.
    lazy_update : bool
        Row-sparse lazy updates in MXNet; inert on mxref's dense arrays.
    eta : float
        LARS coefficient scaling the learning rate.
    eps : float
        Added to the denominator, for very small gradients.
    momentum_correction : bool
        Scale the momentum by the learning rate's change under a scheduler.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001,
                 eps: float = 0, momentum_correction: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size()
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        """``Optimizer._get_lrs``, remembering the previous and current base rate (momentum correction)."""
        base = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        self.last_lr = base if self.cur_lr is None else self.cur_lr
        self.cur_lr = base
        return super()._get_lrs(indices)

    def set_wd_mult(self, args_wd_mult) -> None:
        """As ``Optimizer.set_wd_mult``, but only ``*_weight`` names keep weight decay by default."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values() if not n.endswith("_weight")}
        self.wd_mult.update(self._sym_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _name(self, index) -> str:
        return self.idx2name[index] if index in self.idx2name else str(index)

    def _l2norm(self, v, rescale: bool = False) -> float:
        v = v.astype("float32")
        if rescale:
            v *= self.rescale_grad
        return float(nd.norm(v).asnumpy()[0])

    def _get_lars(self, index, weight, g, lr, wd) -> float:
        """The scaled learning rate of one weight (the unfused path)."""
        if self._name(index).endswith(_NO_LARS):
            return lr
        w_norm, g_norm = self._l2norm(weight), self._l2norm(g, rescale=True)
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr

    def _update_impl(self, indices, weights, grads, states, multi_precision: bool = False) -> None:
        if not isinstance(indices, (tuple, list)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        aggregate = all(w.stype == "default" and g.stype == "default" for w, g in zip(weights, grads))
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kw = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            corrected = self.momentum_correction and self.last_lr != 0
            kw["momentum"] = self.momentum * (self.cur_lr / self.last_lr) if corrected else self.momentum
        kw.update(self._clip())
        if aggregate:
            self._fused(indices, weights, grads, states, lrs, wds, kw, multi_precision)
            return
        lrs = [self._get_lars(i, w, g, lr, wd) for i, w, g, lr, wd in zip(indices, weights, grads, lrs, wds)]
        self._single_sgd(weights, grads, states, lrs, wds, kw, multi_precision)

    def _fused(self, indices, weights, grads, states, lrs, wds, kw, multi_precision: bool) -> None:
        # LARS weights first, then the others, so one multi_lars call covers a prefix of the rates.
        lars = [k for k, i in enumerate(indices) if not self._name(i).endswith(_NO_LARS)]
        order = lars + [k for k in range(len(indices)) if k not in set(lars)]
        ctx = weights[0].context
        new_lrs = nd.array([lrs[k] for k in order], ctx=ctx, dtype="float32")
        new_wds = nd.array([wds[k] for k in order], ctx=ctx, dtype="float32")
        ws, gs, ss = ([seq[k] for k in order] for seq in (weights, grads, states))
        n = len(lars)
        if n > 0:
            w_sum_sq = nd.multi_sum_sq(*ws[:n], num_arrays=n)
            g_sum_sq = nd.multi_sum_sq(*gs[:n], num_arrays=n)
            nd.multi_lars(new_lrs[:n], w_sum_sq, g_sum_sq, new_wds[:n], eta=self.eta, eps=self.eps,
                          rescale_grad=self.rescale_grad, out=new_lrs[:n])
        size = max(1, self.aggregate_num)    # 0 (no grouping by the Updater) still means one by one
        for lo in range(0, len(ws), size):
            hi = min(lo + size, len(ws))
            w, g, s = ws[lo:hi], gs[lo:hi], ss[lo:hi]
            self._fused_sgd(w, g, s, kw, multi_precision, rates=[new_lrs[lo:hi], new_wds[lo:hi]])
