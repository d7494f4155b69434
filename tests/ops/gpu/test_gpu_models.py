"""Whole graphs on mx.gpu(0): numeric gradients, cpu-vs-gpu consistency, and training an MLP."""
import numpy as np
import pytest

import mxref as mx
from mxref.test_utils import check_consistency, check_numeric_gradient

pytestmark = pytest.mark.timeout(300)


def mlp(hidden=16, classes=4, act="relu"):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1"), act_type=act)
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=classes, name="fc2"), name="softmax")


def test_numeric_gradient_on_gpu0():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("w")
    sym = mx.sym.sum(mx.sym.tanh(mx.sym.FullyConnected(data, weight=w, num_hidden=3, no_bias=True)) * 2.0)
    rng = np.random.default_rng(0)
    loc = {"data": rng.standard_normal((4, 5)), "w": rng.standard_normal((3, 5))}
    check_numeric_gradient(sym, loc, ctx=mx.gpu(0), dtype=np.float64, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("act", ["relu", "tanh", "sigmoid"])
def test_mlp_consistency_cpu_vs_gpu(act):
    shapes = {"data": (8, 20), "softmax_label": (8,)}
    ctx_list = [dict(ctx=mx.cpu(0), **shapes), dict(ctx=mx.gpu(0), **shapes)]
    check_consistency(mlp(act=act), ctx_list, rtol=1e-4, atol=1e-5)


def test_mlp_trains_on_gpu0_to_the_cpu_accuracy():
    """The same Module, same data and initial weights: gpu(0) reaches the cpu(0) accuracy."""
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((4, 20)) * 3
    labels = rng.integers(0, 4, size=256)
    x = (centers[labels] + rng.standard_normal((256, 20))).astype(np.float32)
    accs = {}
    for ctx in (mx.cpu(0), mx.gpu(0)):
        mx.random.seed(7)
        np.random.seed(7)
        it = mx.io.NDArrayIter(x, labels.astype(np.float32), batch_size=32, shuffle=False)
        mod = mx.mod.Module(mlp(), context=ctx)
        mod.fit(it, num_epoch=4, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                initializer=mx.init.Xavier())
        accs[str(ctx)] = mod.score(it, "acc")[0][1]
    assert accs["gpu(0)"] > 0.9
    assert abs(accs["gpu(0)"] - accs["cpu(0)"]) < 0.02, accs


def _lenet():
    from mxref.tools.demo import build_network
    return build_network("lenet", mx)


def test_demo_lenet_consistency_cpu_vs_gpu():
    """The demo's LeNet (conv, BatchNorm, relu, max pooling, dense), forward and backward in
    training mode, and its moving statistics: cpu(0) and gpu(0) agree."""
    shapes = {"data": (4, 1, 8, 8), "softmax_label": (4,)}
    ctx_list = [dict(ctx=mx.cpu(0), **shapes), dict(ctx=mx.gpu(0), **shapes)]
    check_consistency(_lenet(), ctx_list, rtol=1e-3, atol=1e-4)


def test_demo_lenet_trains_on_gpu0_to_the_cpu_accuracy():
    """The demo LeNet on 256 of the bundled digits, two epochs (kept small: the emulator runs each
    CUDA thread as a fiber; benchmarks/bench_gpu.py trains longer on a real GPU): gpu(0) reaches the
    cpu(0) accuracy on the held-out digits, well above chance (0.1)."""
    from mxref.io import load_digits
    x, y = load_digits("train")
    xv, yv = load_digits("val")
    accs = {}
    for ctx in (mx.cpu(0), mx.gpu(0)):
        mx.random.seed(3)
        np.random.seed(3)
        train = mx.io.NDArrayIter(x[:256], y[:256], batch_size=64, shuffle=False)
        val = mx.io.NDArrayIter(xv, yv, batch_size=64)
        mod = mx.mod.Module(_lenet(), context=ctx)
        mod.fit(train, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                initializer=mx.init.Xavier())
        accs[str(ctx)] = mod.score(val, "acc")[0][1]
    assert accs["cpu(0)"] > 0.4, accs
    assert abs(accs["gpu(0)"] - accs["cpu(0)"]) < 0.03, accs


def _tiny_resnet():
    """conv-bn-relu, one residual block (two convs, identity shortcut), global average pooling."""
    data = mx.sym.Variable("data")
    x = mx.sym.Activation(mx.sym.BatchNorm(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4,
                                                              name="c0"), fix_gamma=False, name="b0"),
                          act_type="relu")
    y = mx.sym.Activation(mx.sym.BatchNorm(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4,
                                                              name="c1"), fix_gamma=False, name="b1"),
                          act_type="relu")
    y = mx.sym.BatchNorm(mx.sym.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c2"),
                         fix_gamma=False, name="b2")
    z = mx.sym.Activation(x + y, act_type="relu")
    z = mx.sym.Pooling(z, global_pool=True, pool_type="avg", kernel=(1, 1))
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.flatten(z), num_hidden=3), name="softmax")


def test_tiny_resnet_consistency_cpu_vs_gpu():
    shapes = {"data": (2, 2, 6, 6), "softmax_label": (2,)}
    check_consistency(_tiny_resnet(), [dict(ctx=mx.cpu(0), **shapes), dict(ctx=mx.gpu(0), **shapes)],
                      rtol=1e-3, atol=1e-4)


def test_gluon_softmax_cross_entropy_trains_on_gpu0():
    """Gluon: a Dense layer, the fused softmax cross-entropy, Trainer's SGD. On gpu(0) the losses
    fall and follow the cpu(0) run of the same seed step by step."""
    from mxref import autograd, gluon
    rng = np.random.default_rng(2)
    xh = rng.standard_normal((64, 8)).astype(np.float32)
    yh = (xh[:, 0] + xh[:, 1] > 0).astype(np.float32)
    runs = {}
    for ctx in (mx.cpu(0), mx.gpu(0)):
        mx.random.seed(5)
        x, y = mx.nd.array(xh, ctx=ctx), mx.nd.array(yh, ctx=ctx)
        net = gluon.nn.Dense(2)
        net.initialize(mx.init.Xavier(), ctx=ctx)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
        losses = []
        for _ in range(20):
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(64)
            losses.append(float(loss.mean().asscalar()))
        assert net.weight.data().context == ctx
        runs[str(ctx)] = losses
    gpu_losses = runs["gpu(0)"]
    assert gpu_losses[-1] < gpu_losses[0] * 0.5, gpu_losses
    np.testing.assert_allclose(gpu_losses, runs["cpu(0)"], rtol=1e-4, atol=1e-5)
