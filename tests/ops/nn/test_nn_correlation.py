"""Correlation: the patch-comparison loop as reference, MXNet's numbers, gradients, shapes."""
import math

import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def corr_ref(d1, d2, k, md, s1, s2, pad, mult):
    a = np.pad(d1, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    b = np.pad(d2, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    N, C, Hp, Wp = a.shape
    border = md + (k - 1) // 2
    th, tw = math.ceil((Hp - 2 * border) / s1), math.ceil((Wp - 2 * border) / s1)
    r = md // s2
    D = 2 * r + 1
    out = np.zeros((N, D * D, th, tw))
    for q in range(D * D):
        dy, dx = (q // D - r) * s2, (q % D - r) * s2
        for i in range(th):
            for j in range(tw):
                y, x = i * s1 + md, j * s1 + md
                pa = a[:, :, y:y + k, x:x + k]
                pb = b[:, :, y + dy:y + dy + k, x + dx:x + dx + k]
                f = pa * pb if mult else np.abs(pa - pb)
                out[:, q, i, j] = f.sum(axis=(1, 2, 3)) / (k * k * C)
    return out


CASES = [dict(kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0, is_multiply=True),
         dict(kernel_size=3, max_displacement=2, stride1=2, stride2=1, pad_size=2, is_multiply=True),
         dict(kernel_size=1, max_displacement=4, stride1=1, stride2=2, pad_size=4, is_multiply=False),
         dict(kernel_size=3, max_displacement=2, stride1=3, stride2=2, pad_size=1, is_multiply=False)]


@pytest.mark.parametrize("kw", CASES)
def test_forward(rng, kw):
    """Every displacement's patch products (or absolute differences), averaged over k*k*C."""
    d1, d2 = rng.standard_normal((2, 3, 7, 8)), rng.standard_normal((2, 3, 7, 8))
    out = forward("Correlation", [d1, d2], **kw)[0]
    want = corr_ref(d1, d2, kw["kernel_size"], kw["max_displacement"], kw["stride1"], kw["stride2"],
                    kw["pad_size"], kw["is_multiply"])
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", CASES)
def test_gradient(rng, kw):
    """Both inputs' gradients agree with central differences (|a - b| away from its kink)."""
    d1, d2 = rng.standard_normal((1, 2, 6, 6)), rng.standard_normal((1, 2, 6, 6))
    check_gradient("Correlation", [d1, d2], rtol=1e-4, atol=1e-7, **kw)


def test_matches_mxnet():
    """Numbers MXNet 1.9.1 computed on fixed inputs."""
    d1 = mx.nd.array((np.arange(50).reshape(1, 2, 5, 5) % 7) / 7.0)
    d2 = mx.nd.array(np.cos(np.arange(50)).reshape(1, 2, 5, 5))
    o = mx.nd.Correlation(d1, d2, kernel_size=3, max_displacement=1, pad_size=1)
    assert o.shape == (1, 9, 3, 3)
    np.testing.assert_allclose(o[0, :, 2, 2].asnumpy(), [
        0.13762826, 0.11751255, 0.04906142, -0.01013491, 0.11781776, 0.11048970, -0.14264506,
        0.03493292, 0.10906649], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(o.sum().asscalar(), 3.20653176, rtol=1e-5)
    o = mx.nd.Correlation(d1, d2, kernel_size=1, max_displacement=2, stride2=2, pad_size=2, is_multiply=False)
    np.testing.assert_allclose(o[0, :, 1, 3].asnumpy(), [
        0.42857143, 0.42857143, 0.42857143, 0.50888491, 0.50795984, 0.42857143, 1.40107083, 0.33831599,
        0.42857143], rtol=1e-5)


def test_shapes_and_errors():
    """(N, (2 r + 1)^2, top h, top w); data2 must match data1; too small a map is an error."""
    s = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), kernel_size=3, max_displacement=2, pad_size=2,
                           stride1=2)
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(2, 3, 9, 10)) == ([(2, 3, 9, 10)] * 2, [(2, 25, 4, 4)], [])
    with pytest.raises(MXNetError, match="data2"):
        s.infer_shape(a=(2, 3, 9, 10), b=(2, 3, 9, 9))
    with pytest.raises(MXNetError, match="too small"):
        mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), max_displacement=4).infer_shape(a=(1, 1, 6, 6))
