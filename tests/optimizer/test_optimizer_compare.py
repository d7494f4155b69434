"""``mxref.test_utils.compare_optimizer`` / ``compare_ndarray_tuple`` (MXNet 1.9.1's signatures):
they pass for equivalent optimizers, single- and multi-tensor, and fail for different ones."""
import numpy as np
import pytest

import mxref as mx
from mxref import optimizer as opt
from mxref.test_utils import compare_ndarray_tuple, compare_optimizer


class PlainSGD(opt.Optimizer):
    """A reference written with NDArray arithmetic (as MXNet's tests write theirs)."""

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype) if self.momentum else None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = grad * self.rescale_grad
        if self.clip_gradient is not None:
            g = mx.nd.clip(g, -self.clip_gradient, self.clip_gradient)
        if state is None:
            weight[:] = (1 - lr * wd) * weight - lr * g
        else:
            state[:] = self.momentum * state - lr * wd * weight - lr * g
            weight[:] += state


@pytest.mark.parametrize("kw", [{}, dict(momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.3)])
def test_compare_optimizer_single_and_multi_tensor(kw):
    """SGD (fused) and the plain reference agree on one weight, and on four weights updated by
    SGD in one call (ntensors) against the reference one at a time."""
    mx.random.seed(0)
    compare_optimizer(PlainSGD(**kw), opt.SGD(**kw), (3, 4), np.float32)
    compare_optimizer(PlainSGD(**kw), opt.SGD(**kw), [(3, 4), (5,), (2, 2), (7, 1)], np.float32, ntensors=4)


def test_compare_optimizer_fails_for_different_optimizers():
    """A different learning rate is caught (weights differ), as is a different state."""
    with pytest.raises(AssertionError):
        compare_optimizer(PlainSGD(learning_rate=0.1), opt.SGD(learning_rate=0.2), (3, 4), np.float32)
    with pytest.raises(AssertionError):
        compare_ndarray_tuple((mx.nd.ones(2), mx.nd.zeros(2)), (mx.nd.ones(2), mx.nd.ones(2)))
    compare_ndarray_tuple(None, (mx.nd.ones(2),))        # None on either side: nothing to compare
    with pytest.raises(ValueError, match="ntensors=1"):
        compare_optimizer(PlainSGD(), opt.SGD(), (3,), np.float32, ntensors=2)
