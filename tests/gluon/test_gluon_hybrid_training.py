"""Hybridized training steps equal imperative ones over several steps (the backward plans replayed,
the executors reused, the parameters' arrays tracked through re-initialization and grad_req)."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon, nd
from mxref.gluon import nn


def _mlp(seed=0):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu", in_units=4), nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier(rnd_type="gaussian", magnitude=2, factor_type="in"))
    rng = np.random.RandomState(seed)
    for p in net.collect_params().values():
        p.set_data(nd.array(rng.normal(0, 0.5, p.shape).astype(np.float32)))
    return net


def _batch(step):
    rng = np.random.RandomState(100 + step)
    return (nd.array(rng.normal(0, 1, (5, 4)).astype(np.float32)),
            nd.array(rng.randint(0, 3, 5).astype(np.float32)))


def _both(fn, **kwargs):
    """``fn(net)`` on an imperative and a hybridized copy of one MLP; their parameters afterwards."""
    out = []
    for hybrid in (False, True):
        net = _mlp(**kwargs)
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        fn(net)
        out.append({k[len(net.prefix):]: v.data().asnumpy() for k, v in net.collect_params().items()})
    return out


def _close(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_sgd_momentum_steps_match():
    """Six SGD-momentum steps: the hybridized network ends where the imperative one does."""
    def train(net):
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
        for step in range(6):
            x, y = _batch(step)
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(5)
    _close(*_both(train))


def test_grad_req_add_and_retain_graph_match():
    """grad_req='add' over three steps, each differentiated twice (retain_graph)."""
    def train(net):
        net.collect_params().setattr("grad_req", "add")
        for step in range(3):
            x, _ = _batch(step)
            with autograd.record():
                y = (net(x) ** 2).sum()
            y.backward(retain_graph=True)
            y.backward()
        for p in net.collect_params().values():
            p.set_data(p.grad())      # compare the accumulated gradients themselves
    _close(*_both(train))


def test_two_heads_and_autograd_grad_match():
    """Two losses of one output backwarded together, then autograd.grad of another step."""
    def train(net):
        x, y = _batch(0)
        with autograd.record():
            out = net(x)
            heads = [gluon.loss.SoftmaxCrossEntropyLoss()(out, y), (out * out).mean(axis=1)]
        autograd.backward(heads)
        params = list(net.collect_params().values())
        grads = [p.grad().copy() for p in params]
        x, _ = _batch(1)
        with autograd.record():
            z = net(x).sum()
        extra = autograd.grad(z, [p.data() for p in params])
        for p, g, e in zip(params, grads, extra):
            p.set_data(g + 0.5 * e)
    _close(*_both(train))


def test_reinitialized_parameters_and_new_gradient_buffers_are_used():
    """Arrays replaced between calls (force_reinit, grad_req) are the ones the next call reads."""
    net = _mlp()
    net.hybridize()
    x, _ = _batch(0)
    net(x)
    net.initialize(mx.init.Constant(0.25), force_reinit=True)     # (biases keep their 'zeros')
    expect = np.maximum(x.asnumpy() @ np.full((4, 8), 0.25), 0) @ np.full((8, 3), 0.25)
    np.testing.assert_allclose(net(x).asnumpy(), expect, rtol=1e-6)
    w = net[0].weight
    w.grad_req = "null"
    w.grad_req = "write"       # new gradient buffer: the next recorded call must write it
    with autograd.record():
        net(x).sum().backward()
    assert np.abs(w.grad().asnumpy()).sum() > 0


@pytest.mark.parametrize("steps", [1, 4])
def test_shared_parameters_match(steps):
    """Two hybridized blocks sharing the first layer's parameters, trained a few steps."""
    def train(net):
        other = nn.Dense(8, activation="relu", in_units=4, params=net[0].params)
        if net._active:
            other.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
        for step in range(steps):
            x, y = _batch(step)
            with autograd.record():
                loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y) + other(x).mean(axis=1)
            loss.backward()
            trainer.step(5)
    _close(*_both(train))
