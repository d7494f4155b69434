"""``Nadam``: Adam with Nesterov momentum (Dozat, 2015), with a warming momentum schedule.

As MXNet 1.9.1, in NDArray operations, with ``g = clip(rescale_grad*grad + wd*w, clip_gradient)``::

    mu_t   = beta1 * (1 - 0.5 * 0.96^(t * schedule_decay))         (and mu_{t+1} likewise)
    m_schedule *= mu_t                                             (one product for the optimizer)
    m = beta1*m + (1-beta1)*g;   v = beta2*v + (1-beta2)*g^2
    m_bar = (1-mu_t) * g / (1-m_schedule) + mu_{t+1} * m / (1 - m_schedule*mu_{t+1})
    w -= lr * m_bar / (sqrt(v / (1-beta2^t)) + epsilon)

NOTE: ``m_schedule`` is one number for the whole optimizer, multiplied at *every* update of
*any* weight, so with several weights it advances once per weight per step: MXNet does so, and
matching its numbers means doing the same.
"""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["Nadam"]


@register
class Nadam(Optimizer):
    """The Nesterov Adam optimizer (``mx.optimizer.Nadam``).

    Parameters
    ----------
    learning_rate : float
        Default 0.001.
    beta1, beta2 : float
        Exponential decay rates of the first and second moment estimates.
    epsilon : float
        Small value to avoid division by 0.
    schedule_decay : float
        Exponential decay rate of the momentum schedule.
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index, weight):
        return self._zero_states(weight, 2)     # mean, variance

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        grad = grad * self.rescale_grad + wd * weight
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        momentum_t = self.beta1 * (1. - 0.5 * pow(0.96, t * self.schedule_decay))
        momentum_t_1 = self.beta1 * (1. - 0.5 * pow(0.96, (t + 1) * self.schedule_decay))
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1
        m_t, v_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        v_t[:] *= self.beta2
        v_t[:] += (1. - self.beta2) * grad * grad
        grad_prime = grad / (1. - self.m_schedule)
        m_t_prime = m_t / (1. - m_schedule_next)
        v_t_prime = v_t / (1. - pow(self.beta2, t))
        m_t_bar = (1. - momentum_t) * grad_prime + momentum_t_1 * m_t_prime
        weight[:] -= lr * m_t_bar / (nd.sqrt(v_t_prime) + self.epsilon)
