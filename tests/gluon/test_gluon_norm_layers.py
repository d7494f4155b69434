"""gluon.nn.InstanceNorm, gluon.nn.GroupNorm and gluon.loss.CTCLoss over their operators."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon


def _run(layer, x, hybridize):
    layer.initialize()
    if hybridize:
        layer.hybridize()
    x = mx.nd.array(x)
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward()
    return y.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize("hybridize", [False, True])
def test_groupnorm(hybridize):
    """MXNet's docstring example; gamma and beta have one entry per group."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    layer = gluon.nn.GroupNorm()
    y, _ = _run(layer, x, hybridize)
    np.testing.assert_allclose(y[0, 0], [-1.5932543, -1.3035717, -1.0138891, -0.7242065], rtol=1e-5)
    layer = gluon.nn.GroupNorm(num_groups=2, prefix="gn_")
    y, g = _run(layer, np.random.default_rng(0).standard_normal((2, 4, 3)), hybridize)
    assert layer.gamma.shape == (2,) and sorted(layer.collect_params()) == ["gn_beta", "gn_gamma"]
    assert repr(layer) == "GroupNorm(eps=1e-05, num_groups=2, center=True, scale=True)"


@pytest.mark.parametrize("hybridize", [False, True])
def test_instancenorm(hybridize):
    """MXNet's docstring example; axis other than 1 is swapped in; scale defaults to False."""
    x = np.array([[[1.1, 2.2]], [[3.3, 4.4]]], np.float32)
    layer = gluon.nn.InstanceNorm()
    y, _ = _run(layer, x, hybridize)
    np.testing.assert_allclose(y, [[[-0.99998355, 0.99998331]], [[-0.99998319, 0.99998361]]], rtol=1e-6)
    assert layer.gamma.grad_req == "null" and repr(layer).endswith("scale=False, in_channels=1)")
    z = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    layer = gluon.nn.InstanceNorm(axis=2, scale=True, in_channels=4)
    y, _ = _run(layer, z, hybridize)
    t = np.swapaxes(z, 1, 2)
    want = (t - t.mean((2, 3), keepdims=True)) / np.sqrt(t.var((2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, np.swapaxes(want, 1, 2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("hybridize", [False, True])
def test_ctc_loss(hybridize):
    """NTC/TNC and NT/TN layouts agree; blank is the last class; lengths and weight apply."""
    rng = np.random.default_rng(0)
    pred = rng.standard_normal((2, 20, 4)).astype(np.float32)
    label = np.array([[1, 0, -1, -1], [2, 1, 2, -1]], np.float32)
    loss = gluon.loss.CTCLoss()
    if hybridize:
        loss.hybridize()
    a = loss(mx.nd.array(pred), mx.nd.array(label)).asnumpy()
    want = mx.nd.CTCLoss(mx.nd.array(pred.swapaxes(0, 1)), mx.nd.array(label), blank_label="last").asnumpy()
    np.testing.assert_allclose(a, want, rtol=1e-6)
    tn = gluon.loss.CTCLoss(layout="TNC", label_layout="TN", weight=0.5)
    b = tn(mx.nd.array(pred.swapaxes(0, 1)), mx.nd.array(label.T)).asnumpy()
    np.testing.assert_allclose(b, 0.5 * a, rtol=1e-6)
    lengths = (mx.nd.array(pred), mx.nd.array(label), mx.nd.array([10, 18]), mx.nd.array([1, 3]))
    if hybridize:     # as in MXNet, a hybridized block keeps the input structure of its first call
        with pytest.raises(ValueError, match="argument structure"):
            loss(*lengths)
        loss = gluon.loss.CTCLoss()
        loss.hybridize()
    c = loss(*lengths).asnumpy()
    short = mx.nd.CTCLoss(mx.nd.array(pred[:1, :10].swapaxes(0, 1)), mx.nd.array(label[:1, :1]),
                          blank_label="last").asnumpy()
    np.testing.assert_allclose(c[0], short[0], rtol=1e-6)
    with pytest.raises(ValueError, match="layouts"):
        gluon.loss.CTCLoss(layout="NCT")
