"""``FTML``: Follow the Moving Leader (Zheng & Kwok, ICML 2017), one ``ftml_update`` per step.

Weight decay goes inside the clip; the formulas are in ``mxref/ops/optimizer/ftml.py``.
"""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["FTML"]


@register
class FTML(Optimizer):
    """The FTML optimizer (``mx.optimizer.FTML``).

    Parameters
    ----------
    beta1 : float
        0 < beta1 < 1, generally close to 0.5.
    beta2 : float
        0 < beta2 < 1, generally close to 1.
    epsilon : float
        Small value to avoid division by 0.
    """

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return self._zero_states(weight, 3)     # d_0, v_0, z_0

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        kw = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
              "rescale_grad": self.rescale_grad, "t": self._index_update_count[index]}
        if self.clip_gradient:
            kw["clip_grad"] = self.clip_gradient
        prev_d, prev_v, prev_z = state
        nd.ftml_update(weight, grad, prev_d, prev_v, prev_z, out=weight, lr=self._get_lr(index),
                       wd=self._get_wd(index), **kw)
