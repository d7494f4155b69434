"""gluon.contrib.nn.PixelShuffle1D/2D/3D against the index formula, imperative and hybridized."""
import itertools

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def _reference(x, factors):
    """y[n, c, w1*f1+i1, ...] = x[n, c*F + flat(i1..ik), w1, ...] with F = f1*...*fk."""
    n, cf = x.shape[:2]
    space = x.shape[2:]
    total = int(np.prod(factors))
    y = np.empty((n, cf // total) + tuple(w * f for w, f in zip(space, factors)), x.dtype)
    for c in range(cf // total):
        for j, idx in enumerate(itertools.product(*[range(f) for f in factors])):
            sl = tuple(slice(i, None, f) for i, f in zip(idx, factors))
            y[(slice(None), c) + sl] = x[:, c * total + j]
    return y


@pytest.mark.parametrize("cls,shape,factor", [
    ("PixelShuffle1D", (2, 12, 5), 3),
    ("PixelShuffle2D", (2, 12, 3, 2), (2, 3)),
    ("PixelShuffle3D", (2, 24, 3, 2, 2), (2, 3, 2)),
])
def test_pixel_shuffle(cls, shape, factor):
    """Forward equals the formula in both modes; the gradient is the inverse permutation."""
    x = np.random.RandomState(0).randn(*shape).astype("float32")
    factors = (factor,) if isinstance(factor, int) else factor
    net = getattr(mx.gluon.contrib.nn, cls)(factor)
    want = _reference(x, factors)
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        xi = mx.nd.array(x)
        xi.attach_grad()
        w = mx.nd.array(np.arange(want.size, dtype="float32").reshape(want.shape))
        with mx.autograd.record():
            loss = (net(xi) * w).sum()
        loss.backward()
        np.testing.assert_array_equal(net(mx.nd.array(x)).asnumpy(), want)
        # d/dx of sum(shuffle(x) * w) puts w back where each element came from
        back = np.empty_like(x)
        np.put(back, _reference(np.arange(x.size).reshape(x.shape), factors).ravel(), w.asnumpy().ravel())
        np.testing.assert_array_equal(xi.grad.asnumpy(), back)


def test_pixel_shuffle_bad_factor():
    """A factor of the wrong length or below 1 names the layer."""
    with pytest.raises(MXNetError, match="PixelShuffle2D: factor"):
        mx.gluon.contrib.nn.PixelShuffle2D((2, 2, 2))
    with pytest.raises(MXNetError, match="PixelShuffle1D: factor"):
        mx.gluon.contrib.nn.PixelShuffle1D(0)
