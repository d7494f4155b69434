"""Learning-rate schedules (``mx.lr_scheduler``): the learning rate as a function of ``num_update``.

An optimizer calls ``scheduler(num_update)`` before every update, where ``num_update`` is the
largest number of updates applied to any one weight so far; it is 1 at the first update.

NOTE: ``FactorScheduler`` and ``MultiFactorScheduler`` are *stateful*, as MXNet's: they lower
``base_lr`` in place as ``num_update`` passes each step and never raise it again, so calling them
with a smaller ``num_update`` later does not restore an earlier rate.
"""
from __future__ import annotations

import logging
import math
from typing import List

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


class LRScheduler:
    """Base class: holds ``base_lr`` and the optional warm-up phase.

    Parameters
    ----------
    base_lr : float
        The learning rate after warm-up (an optimizer given ``learning_rate`` overwrites it).
    warmup_steps : int
        Updates ``0 .. warmup_steps-1`` use the warm-up rate instead of the schedule.
    warmup_begin_lr : float
        The rate warm-up starts from.
    warmup_mode : {'linear', 'constant'}
        'linear' climbs from ``warmup_begin_lr`` to ``base_lr`` in equal increments;
        'constant' stays at ``warmup_begin_lr``.
    """

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        if not isinstance(warmup_steps, int):
            raise ValueError(f"warmup_steps must be an int, got {warmup_steps!r}")
        if warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_begin_lr > base_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The rate during warm-up (``num_update < warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise ValueError(f"num_update {num_update} is past warm-up ({self.warmup_steps} steps)")
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        span = self.warmup_final_lr - self.warmup_begin_lr
        return self.warmup_begin_lr + span * float(num_update) / float(self.warmup_steps)

    def __call__(self, num_update: int) -> float:
        """The learning rate for update number ``num_update`` (1 at the first update)."""
        raise NotImplementedError("an LRScheduler must define __call__")


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates: ``base_lr * factor**floor((n-1)/step)``.

    The rate never goes below ``stop_factor_lr``.

    Examples
    --------
    >>> s = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    >>> [s(n) for n in range(1, 6)]
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0   # the update count at which base_lr was last lowered

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # Strictly greater: update n = step is still at the old rate, n = step + 1 is the first
        # at the new one, which gives the floor((n-1)/step) exponent.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not change in "
                             "the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` each time ``num_update`` passes one of the increasing ``step``s.

    Update ``n`` uses ``base_lr * factor**k`` with ``k`` the number of steps strictly below ``n``.
    """

    def __init__(self, step: List[int], factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise ValueError(f"step must be a non-empty list of ints, got {step!r}")
        for i, s in enumerate(step):
            if i > 0 and s <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if s < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay after warm-up: ``final_lr + (base_lr - final_lr) * (1 - t/T)**pwr``.

    ``t = num_update - warmup_steps`` and ``T = max_update - warmup_steps``; past ``max_update``
    the rate stays at ``final_lr``.

    NOTE: the decay starts from the ``base_lr`` given at construction (``base_lr_orig``), as in
    MXNet, so an optimizer's ``learning_rate`` that overwrites ``base_lr`` only changes warm-up.
    """

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise ValueError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * pow(1 - frac, self.power)
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay after warm-up: ``final_lr + (base_lr - final_lr) * (1 + cos(pi*t/T)) / 2``.

    ``t`` and ``T`` as in ``PolyScheduler``; past ``max_update`` the rate stays at ``final_lr``.
    """

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise ValueError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = (num_update - self.warmup_steps) / self.max_steps
            decay = (1 + math.cos(math.pi * frac)) / 2
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * decay
        return self.base_lr
