"""Gluon model parallelism: each child block's parameters initialized on its own device, activations
moved with ``as_in_context`` (recorded, so gradients flow back), one Trainer for all of it, and
``save_parameters`` / ``load_parameters`` across devices."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.ndarray import imperative


class TwoStage(gluon.Block):
    def __init__(self, ctxs):
        super().__init__()
        self.ctxs = ctxs
        self.lower = gluon.nn.Dense(8, activation="tanh", in_units=5)
        self.upper = gluon.nn.Dense(3, in_units=8)

    def forward(self, x):
        h = self.lower(x.as_in_context(self.ctxs[0]))
        return self.upper(h.as_in_context(self.ctxs[1]))


def build(ctxs):
    net = TwoStage(ctxs)
    for block, ctx in ((net.lower, ctxs[0]), (net.upper, ctxs[1])):
        block.initialize(mx.init.Uniform(0.5), ctx=ctx)
    rng = np.random.RandomState(7)
    # by structural name (lower.bias, lower.weight, ...): the global names' counters vary
    for _, p in sorted(net._collect_params_with_prefix().items()):
        p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
    return net


@pytest.mark.parametrize("plain", [False, True], ids=["tuned", "plain"])
def test_split_block_trains_as_the_one_device_block(plain, tmp_path):
    x = mx.nd.array(np.random.RandomState(0).randn(6, 5))
    y = mx.nd.array([0, 1, 2, 0, 1, 2])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    nets = []
    with imperative.plain_paths(plain):
        for ctxs in ([mx.cpu(0), mx.cpu(0)], [mx.cpu(1), mx.cpu(2)]):
            net = build(ctxs)
            trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2, "momentum": 0.9})
            for _ in range(3):
                with autograd.record():
                    loss = loss_fn(net(x), y.as_in_context(ctxs[1]))
                loss.backward()
                trainer.step(6)
            nets.append(net)
    one, split = nets
    assert split.lower.weight.data().context == mx.cpu(1) == split.lower.weight.grad().context
    assert split.upper.weight.data().context == mx.cpu(2) == split.upper.weight.grad().context
    for a, b in ((one.lower, split.lower), (one.upper, split.upper)):
        for name in ("weight", "bias"):
            np.testing.assert_allclose(getattr(a, name).data().asnumpy(), getattr(b, name).data().asnumpy(),
                                       rtol=1e-6, atol=1e-7)
    path = str(tmp_path / "split.params")
    split.save_parameters(path)
    again = TwoStage([mx.cpu(1), mx.cpu(2)])
    again.lower.initialize(ctx=mx.cpu(1))
    again.upper.initialize(ctx=mx.cpu(2))
    again.load_parameters(path)          # each parameter stays on the device it was initialized on
    np.testing.assert_array_equal(again.upper.weight.data().asnumpy(), split.upper.weight.data().asnumpy())
    assert again.upper.weight.data().context == mx.cpu(2)



def test_hybridized_children_keep_their_devices():
    """Each child hybridizes on its own device; gradients equal the imperative run's."""
    x = mx.nd.array(np.random.RandomState(0).randn(6, 5))
    grads = []
    for hybrid in (False, True):
        net = build([mx.cpu(1), mx.cpu(2)])
        if hybrid:
            net.hybridize()
        with autograd.record():
            out = net(x)
            loss = (out * out).sum()
        loss.backward()
        assert out.context == mx.cpu(2) and net.lower.weight.grad().context == mx.cpu(1)
        grads.append([p.grad().asnumpy() for p in (net.lower.weight, net.upper.weight)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
