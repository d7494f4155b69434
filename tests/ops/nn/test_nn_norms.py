"""GroupNorm, InstanceNorm, L2Normalization, SoftmaxActivation: numpy references, gradients, shapes."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def group_ref(x, G, gamma, beta, eps):
    out = np.empty_like(x)
    n, c = x.shape[:2]
    for i in range(n):
        for g in range(G):
            sl = slice(g * c // G, (g + 1) * c // G)
            part = x[i, sl]
            out[i, sl] = (part - part.mean()) / np.sqrt(part.var() + eps) * gamma[g] + beta[g]
    return out


def test_groupnorm_forward(rng):
    """Each group of C/G channels is normalised per sample; gamma/beta have one entry per group."""
    x = rng.standard_normal((2, 6, 3, 2))
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    out, mean, std = forward("GroupNorm", [x, gamma, beta], num_groups=3, eps=1e-3)
    np.testing.assert_allclose(out, group_ref(x, 3, gamma, beta, 1e-3), rtol=1e-10)
    assert mean.shape == std.shape == (2, 3)
    np.testing.assert_allclose(mean, x.reshape(2, 3, -1).mean(-1))


def test_instancenorm_forward(rng):
    """Each (sample, channel) is normalised over space; hidden mean/var are (N, C)."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    gamma, beta = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    out, mean, var = forward("InstanceNorm", [x, gamma, beta])
    xhat = (x - x.mean(2, keepdims=True)) / np.sqrt(x.var(2, keepdims=True) + 1e-3)
    want = xhat * gamma[:, None] + beta[:, None]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var(2), rtol=1e-5)


def test_instancenorm_docstring_example():
    """MXNet's documented numbers."""
    x = np.array([[[1.1, 2.2]], [[3.3, 4.4]]], np.float32)
    out = mx.nd.InstanceNorm(mx.nd.array(x), mx.nd.array([1.5]), mx.nd.array([0.5])).asnumpy()
    np.testing.assert_allclose(out, [[[-0.997527, 1.99752665]], [[-0.99752653, 1.99752724]]], rtol=1e-5)


@pytest.mark.parametrize("op,params,c", [("GroupNorm", {"num_groups": 2}, 2), ("InstanceNorm", {}, 4)])
def test_norm_gradients(rng, op, params, c):
    """Gradients of data, gamma and beta agree with central differences."""
    x = rng.standard_normal((2, 4, 3))
    check_gradient(op, [x, rng.standard_normal(c), rng.standard_normal(c)], rtol=1e-4, atol=1e-6, **params)


def test_norm_shapes_and_errors():
    """gamma/beta shapes are inferred; indivisible groups and 2-D data are errors."""
    g = mx.sym.GroupNorm(mx.sym.var("d"), num_groups=2, output_mean_var=True, name="gn")
    assert g.list_outputs() == ["gn_output", "gn_mean", "gn_std"]
    assert g.infer_shape(d=(3, 4, 5))[0] == [(3, 4, 5), (2,), (2,)]
    i = mx.sym.InstanceNorm(mx.sym.var("d"), name="inn")
    assert i.list_outputs() == ["inn_output"] and i.infer_shape(d=(3, 4, 5))[0][1] == (4,)
    with pytest.raises(MXNetError, match="num_groups"):
        g.infer_shape(d=(3, 5, 2))
    with pytest.raises(MXNetError, match="InstanceNorm"):
        i.infer_shape(d=(3, 4))


@pytest.mark.parametrize("mode,axes", [("instance", (1, 2, 3)), ("channel", (1,)), ("spatial", (2, 3))])
def test_l2_normalization(rng, mode, axes):
    """out = x / sqrt(sum x^2 + eps) over the mode's axes; gradient by central differences."""
    x = rng.standard_normal((2, 3, 2, 2))
    out, norm = forward("L2Normalization", [x], mode=mode)
    np.testing.assert_allclose(out, x / np.sqrt((x * x).sum(axes, keepdims=True) + 1e-10))
    assert norm.shape == {"instance": (2,), "channel": (2, 1, 2, 2), "spatial": (2, 3)}[mode]
    check_gradient("L2Normalization", [x], mode=mode)


def test_l2_normalization_docstring_and_errors():
    """MXNet's documented spatial numbers; channel mode needs 3 dimensions."""
    x = mx.nd.array([[[1, 2], [3, 4]], [[2, 2], [5, 6]]])
    np.testing.assert_allclose(mx.nd.L2Normalization(x, mode="spatial").asnumpy(),
                               [[[0.44721359, 0.89442718], [0.6, 0.8]],
                                [[0.70710677, 0.70710677], [0.6401844, 0.76822126]]], rtol=1e-6)
    with pytest.raises(MXNetError, match="L2Normalization: mode 'channel'"):
        mx.sym.L2Normalization(mx.sym.var("d"), mode="channel").infer_shape(d=(2, 3))


@pytest.mark.parametrize("mode", ["instance", "channel"])
def test_softmax_activation(rng, mode):
    """instance: softmax over the last axis; channel: over axis 1 at each position."""
    x = rng.standard_normal((2, 3, 4))
    (y,) = forward("SoftmaxActivation", [x], mode=mode)
    ax = 2 if mode == "instance" else 1
    e = np.exp(x - x.max(ax, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(ax, keepdims=True))
    check_gradient("SoftmaxActivation", [x], mode=mode)
    with pytest.raises(MXNetError, match="SoftmaxActivation: mode 'channel'"):
        mx.nd.SoftmaxActivation(mx.nd.ones((2, 3)), mode="channel").wait_to_read()


def test_groupnorm_output_mean_var(rng):
    """With output_mean_var the mean and std (sqrt(var + eps)) per (sample, group) are visible."""
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    outs = mx.nd.GroupNorm(mx.nd.array(x), mx.nd.ones(2), mx.nd.zeros(2), num_groups=2, output_mean_var=True)
    assert len(outs) == 3
    g = x.reshape(2, 2, -1)
    np.testing.assert_allclose(outs[1].asnumpy(), g.mean(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[2].asnumpy(), np.sqrt(g.var(-1) + 1e-5), rtol=1e-5)
