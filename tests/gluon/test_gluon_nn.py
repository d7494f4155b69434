"""Every gluon.nn layer's forward equals the mx.nd operator it stands for, imperative and hybridized."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.gluon import nn


def check(layer, x, expected_fn, rtol=1e-5, atol=1e-6):
    """Run ``layer`` imperatively and hybridized; both must equal ``expected_fn(params)``."""
    layer.initialize(mx.init.Uniform(0.5))
    out = layer(x)
    params = {k[len(layer.prefix):]: p.data() for k, p in layer.collect_params().items()}
    expected = expected_fn(params).asnumpy()
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=rtol, atol=atol)
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), expected, rtol=rtol, atol=atol)
    return out


def rand(*shape):
    return mx.nd.random.uniform(-1, 1, shape=shape)


def test_dense():
    """Dense = FullyConnected (+ activation); flatten=False keeps leading axes."""
    x = rand(2, 3, 4)
    check(nn.Dense(5, activation="tanh"), x,
          lambda p: mx.nd.tanh(mx.nd.FullyConnected(x, p["weight"], p["bias"], num_hidden=5)))
    check(nn.Dense(5, flatten=False, use_bias=False, in_units=4), x,
          lambda p: mx.nd.FullyConnected(x, p["weight"], no_bias=True, num_hidden=5, flatten=False))


@pytest.mark.parametrize("layer,shape,kwargs", [
    (lambda: nn.Conv1D(3, 2, strides=2, padding=1), (2, 2, 7), dict(kernel=(2,), stride=(2,), pad=(1,))),
    (lambda: nn.Conv2D(3, (2, 3), dilation=2, groups=1), (2, 2, 7, 7), dict(kernel=(2, 3), dilate=(2, 2))),
    (lambda: nn.Conv3D(2, 2), (1, 2, 4, 4, 4), dict(kernel=(2, 2, 2))),
])
def test_convolutions(layer, shape, kwargs):
    """ConvND = Convolution with the layer's kernel, stride, padding and dilation."""
    x = rand(*shape)
    blk = layer()
    check(blk, x, lambda p: mx.nd.Convolution(x, p["weight"], p["bias"], num_filter=blk._channels, **kwargs))


def test_conv2d_transpose():
    """Conv2DTranspose = Deconvolution; the weight is (in_channels, channels, kh, kw)."""
    x = rand(2, 3, 4, 4)
    blk = nn.Conv2DTranspose(2, 3, strides=2, padding=1, output_padding=1)
    out = check(blk, x, lambda p: mx.nd.Deconvolution(
        data=x, weight=p["weight"], bias=p["bias"], kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1),
        num_filter=2, no_bias=False))
    assert blk.weight.shape == (3, 2, 3, 3) and out.shape == (2, 2, 8, 8)


@pytest.mark.parametrize("layer,kwargs,shape", [
    (lambda: nn.MaxPool1D(2), dict(kernel=(2,), stride=(2,), pool_type="max"), (2, 3, 8)),
    (lambda: nn.MaxPool2D((3, 3), strides=2, padding=1, ceil_mode=True),
     dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", pooling_convention="full"),
     (2, 3, 8, 8)),
    (lambda: nn.AvgPool2D(2, padding=1), dict(kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="avg",
                                              count_include_pad=True), (2, 3, 7, 7)),
    (lambda: nn.GlobalAvgPool2D(), dict(kernel=(1, 1), global_pool=True, pool_type="avg"), (2, 3, 5, 5)),
    (lambda: nn.GlobalMaxPool2D(), dict(kernel=(1, 1), global_pool=True, pool_type="max"), (2, 3, 5, 5)),
])
def test_pooling(layer, kwargs, shape):
    """The pooling layers = Pooling with MXNet's argument mapping."""
    x = rand(*shape)
    check(layer(), x, lambda p: mx.nd.Pooling(x, **kwargs))


def test_batchnorm_training_and_inference():
    """BatchNorm = nd.BatchNorm with eps 1e-5 and learned gamma; training moves the running stats."""
    x = rand(4, 3, 2, 2)
    blk = nn.BatchNorm(momentum=0.8)
    check(blk, x, lambda p: mx.nd.BatchNorm(x, p["gamma"], p["beta"], p["running_mean"], p["running_var"],
                                            eps=1e-5, fix_gamma=False))
    with autograd.record():
        blk(x)
    mean = x.asnumpy().mean(axis=(0, 2, 3))
    np.testing.assert_allclose(blk.running_mean.data().asnumpy(), 0.2 * mean, rtol=1e-5, atol=1e-6)


def test_layernorm_embedding_flatten_dropout():
    """LayerNorm, Embedding, Flatten and (inference) Dropout forward as their operators."""
    x = rand(2, 3, 4)
    check(nn.LayerNorm(), x, lambda p: mx.nd.LayerNorm(x, p["gamma"], p["beta"], axis=-1, eps=1e-5))
    idx = mx.nd.array([[0, 2], [3, 1]])
    check(nn.Embedding(4, 5), idx, lambda p: mx.nd.Embedding(idx, p["weight"], input_dim=4, output_dim=5))
    check(nn.Flatten(), x, lambda p: x.reshape((2, 12)))
    check(nn.Dropout(0.7), x, lambda p: x)


def test_dropout_training_drops():
    """Dropout under record zeroes some entries and scales the rest by 1/(1-rate)."""
    blk = nn.Dropout(0.5)
    blk.initialize()
    x = mx.nd.ones((50, 50))
    with autograd.record():
        y = blk(x).asnumpy()
    assert set(np.unique(y)) == {0.0, 2.0} and 0.3 < (y == 0).mean() < 0.7


def test_activations():
    """Activation, LeakyReLU, PReLU, ELU, SELU, GELU, Swish against numpy formulas."""
    x = rand(3, 4)
    xn = x.asnumpy()
    check(nn.Activation("relu"), x, lambda p: mx.nd.relu(x))
    check(nn.Activation("softrelu"), x, lambda p: mx.nd.array(np.log1p(np.exp(xn))))
    check(nn.LeakyReLU(0.1), x, lambda p: mx.nd.array(np.where(xn > 0, xn, 0.1 * xn)))
    check(nn.ELU(0.5), x, lambda p: mx.nd.array(np.where(xn > 0, xn, 0.5 * np.expm1(xn))))
    check(nn.Swish(2.0), x, lambda p: mx.nd.array(xn / (1 + np.exp(-2 * xn))))
    blk = nn.PReLU(in_channels=4)
    check(blk, x, lambda p: mx.nd.LeakyReLU(x, gamma=p["alpha"], act_type="prelu"))
    assert blk.alpha.shape == (4,)
    lam, alpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
    check(nn.SELU(), x, lambda p: mx.nd.array(lam * np.where(xn > 0, xn, alpha * np.expm1(xn))), rtol=1e-4)
    check(nn.GELU(), x, lambda p: mx.nd.LeakyReLU(x, act_type="gelu"))
    with pytest.raises(ValueError, match="slope coefficient"):
        nn.LeakyReLU(-1)


def test_sequential_lambda_and_slicing():
    """Sequential runs children in order; Lambda/HybridLambda wrap functions; slicing copies children."""
    x = rand(2, 3)
    seq = nn.Sequential()
    seq.add(nn.Lambda("tanh"), nn.Lambda(lambda a: a * 2))
    np.testing.assert_allclose(seq(x).asnumpy(), 2 * np.tanh(x.asnumpy()), rtol=1e-6)
    hseq = nn.HybridSequential()
    hseq.add(nn.HybridLambda("relu"), nn.HybridLambda(lambda F, a: F.sigmoid(a)), nn.Dense(2))
    hseq.initialize()
    assert len(hseq) == 3 and isinstance(hseq[1:], nn.HybridSequential) and len(hseq[1:]) == 2
    y = hseq(x).asnumpy()
    hseq.hybridize()
    np.testing.assert_allclose(hseq(x).asnumpy(), y, rtol=1e-6)
    with pytest.raises(ValueError, match="not found"):
        nn.Lambda("no_such_function")


def test_block_gradients_match_through_layers():
    """Gradients of a conv net through hybridize equal the imperative ones (with an input gradient)."""
    net = nn.HybridSequential()
    net.add(nn.Conv2D(2, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(),
            nn.Conv2DTranspose(2, 2, strides=2), nn.Flatten(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    x = rand(2, 1, 4, 4)
    net(x)

    def grads():
        xx = x.copy()
        xx.attach_grad()
        with autograd.record():
            y = (net(xx) ** 2).sum()
        y.backward()
        return [xx.grad.asnumpy()] + [p.grad().asnumpy().copy() for p in net.collect_params().values()
                                      if p.grad_req != "null"]

    imperative = grads()
    for p in net.collect_params().values():
        if "running" in p.name:
            p.set_data(mx.nd.array([0, 0]) if "mean" in p.name else mx.nd.array([1, 1]))
    imperative = grads()
    for p in net.collect_params().values():
        if "running" in p.name:
            p.set_data(mx.nd.array([0, 0]) if "mean" in p.name else mx.nd.array([1, 1]))
    net.hybridize()
    for a, b in zip(grads(), imperative):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_gluon_is_reachable_from_mxref():
    """gluon is importable as mx.gluon with its submodules."""
    assert gluon.nn.Dense is nn.Dense and gluon.rnn.LSTM and gluon.loss.L2Loss and gluon.data.DataLoader
