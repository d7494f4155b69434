"""Optimizers with per-coordinate adaptive step sizes: ``AdaGrad``, ``RMSProp``, ``AdaDelta``.

AdaGrad and AdaDelta clip the rescaled gradient without weight decay and apply the decay to the
weight directly; RMSProp, like Adam, adds weight decay to the gradient before clipping. Each
update is one engine operation (``_adagrad_update``, ``rmsprop_update``/``rmspropalex_update``,
``_adadelta_update``); the formulas are in ``mxref/ops/optimizer/``.
"""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["AdaGrad", "RMSProp", "AdaDelta"]


def _zeros_like(weight):
    # NOTE: these optimizers keep float32 states whatever the weight's dtype, as MXNet's do.
    return nd.zeros(weight.shape, weight.context)


def _clip_or_off(clip_gradient) -> float:
    # AdaGrad/AdaDelta clip whenever clip_gradient is not None (MXNet tests "is not None" here,
    # not truthiness as SGD does); the operators take -1 for "off".
    return -1.0 if clip_gradient is None else clip_gradient


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., 2011): ``history += g^2; w -= lr * (g/sqrt(history + eps) + wd*w)``.

    Parameters
    ----------
    eps : float
        Added to the history under the square root (kept as ``float_stable_eps``).
    """

    def __init__(self, eps: float = 1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros_like(weight)   # history

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        nd._internal._adagrad_update(weight, grad, state, out=weight, lr=self._get_lr(index),
                           wd=self._get_wd(index), epsilon=self.float_stable_eps,
                           rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_or_off(self.clip_gradient))


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's, or with ``centered=True`` Graves's (with momentum ``gamma2``).

    Parameters
    ----------
    learning_rate : float
        Default 0.001.
    gamma1 : float
        Decay of the moving averages of ``g^2`` (and ``g`` when centered).
    gamma2 : float
        Momentum of the step, centered version only.
    epsilon : float
        Added under the square root.
    centered : bool
        Use Graves's centered version.
    clip_weights : float, optional
        Clip weights to ``[-clip_weights, clip_weights]`` after each step.
    """

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))   # n, g, delta
        return (_zeros_like(weight),)                                                # n

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        kw = {"lr": self._get_lr(index), "wd": self._get_wd(index), "gamma1": self.gamma1,
              "epsilon": self.epsilon, "rescale_grad": self.rescale_grad, **self._clip()}
        if self.clip_weights:
            kw["clip_weights"] = self.clip_weights
        if self.centered:
            nd.rmspropalex_update(weight, grad, *state, out=weight, gamma2=self.gamma2, **kw)
        else:
            nd.rmsprop_update(weight, grad, state[0], out=weight, **kw)


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler, 2012); it has no learning rate (``learning_rate`` is ignored).

    Parameters
    ----------
    rho : float
        Decay of the squared-gradient and squared-step averages.
    epsilon : float
        Added under both square roots.
    """

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))   # accumulated g^2, accumulated delta^2

    def update(self, index, weight, grad, state) -> None:
        wd = self._get_wd(index)
        self._update_count(index)
        acc_g, acc_delta = state
        nd._internal._adadelta_update(weight, grad, acc_g, acc_delta, out=weight, rho=self.rho,
                            epsilon=self.epsilon, wd=wd, rescale_grad=self.rescale_grad,
                            clip_gradient=_clip_or_off(self.clip_gradient))
