"""``LossScaler``: AMP's dynamic loss scale (halve on overflow, double after a run of good steps)."""
from __future__ import annotations

import logging

from ... import autograd
from ... import ndarray as nd


class LossScaler:
    """Dynamic loss scaling for float16 training.

    The loss is multiplied by ``loss_scale`` (2**16 at first) before backward, so small float16
    gradients do not flush to zero. ``has_overflow`` checks the gradients once per step: an
    infinite or NaN gradient means the step is skipped and the scale halves; after
    ``scale_seq_len`` (2000) good steps in a row it doubles, up to 2**24. A new scale takes effect
    at the next check, as in MXNet (the step that found the overflow still saw the old one).
    """

    def __init__(self):
        self._loss_scale = 2.0 ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self) -> float:
        return self._loss_scale

    def has_overflow(self, params) -> bool:
        """True if any gradient of ``params`` (Gluon Parameters) is not finite; updates the scale."""
        grads = [g for p in params if p.grad_req != "null" for g in p.list_grad()]
        finite = True
        with autograd.pause():
            for start in range(0, len(grads), 200):      # MXNet checks in chunks of 200 arrays
                chunk = grads[start:start + 200]
                ok = nd.multi_all_finite(*chunk, num_arrays=len(chunk))
                finite = finite and bool(ok.asnumpy()[0])
        overflow = not finite
        self._loss_scale = self._next_loss_scale
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return overflow
