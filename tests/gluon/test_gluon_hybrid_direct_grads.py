"""A hybridized block's executor writes parameter gradients straight into ``.grad`` only when that is safe.

Under ``backward()`` with ``grad_req='write'`` the Parameter's gradient buffer is the executor's own
gradient array, so nothing is copied afterwards; every case where a second contribution or a caller
expecting ``.grad`` untouched exists must still give the imperative results.
"""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.gluon import hybrid_block


def dense(hybrid: bool, grad_req: str = "write", params=None):
    net = gluon.nn.Dense(3, in_units=4, params=params)
    net.initialize(mx.init.Uniform(0.5))
    if grad_req != "write":
        net.collect_params().setattr("grad_req", grad_req)
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    return net


def x_batch(seed: int = 0):
    return mx.nd.array(np.random.default_rng(seed).standard_normal((5, 4)))


def twin_grads(fn, grad_req="write"):
    """``fn(net)`` run on an imperative and a hybridized copy of one Dense; the weight gradients."""
    out = []
    for hybrid in (False, True):
        mx.random.seed(0)
        net = dense(hybrid, grad_req)
        fn(net)
        out.append(net.weight.grad().asnumpy().copy())
    return out


def test_backward_writes_the_parameter_gradient_buffer():
    """The bound gradient array is the Parameter's own; the result equals the imperative one."""
    mx.random.seed(0)
    net = dense(True)
    with autograd.record():
        y = net(x_batch())
    y.backward()
    entry = next(e for es in net._cached_execs.values() for e in es)
    assert any(g is net.weight.grad() for g in entry.direct)
    assert not hybrid_block._claimed          # released once the graph is gone
    imperative, hybridized = twin_grads(lambda n: _one_step(n))
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-5)


def _one_step(net, x=None):
    with autograd.record():
        y = net(x_batch() if x is None else x)
    y.backward()


def test_two_calls_in_one_graph_sum_their_gradients():
    """Two recorded calls of one block: the second gets a buffer of its own, autograd sums both."""
    def fn(net):
        with autograd.record():
            y = net(x_batch(0)) * 2 + net(x_batch(1))
        y.backward()
    imperative, hybridized = twin_grads(fn)
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-5)


def test_blocks_sharing_parameters_and_an_imperative_term():
    """Two hybridized blocks sharing one weight, plus an imperative penalty on it, sum correctly."""
    results = []
    for hybrid in (False, True):
        mx.random.seed(0)
        a = dense(hybrid)
        b = dense(hybrid, params=a.collect_params())
        with autograd.record():
            y = a(x_batch(0)).sum() + b(x_batch(1)).sum() + (a.weight.data() ** 2).sum()
        y.backward()
        results.append(a.weight.grad().asnumpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)


def test_autograd_grad_leaves_dot_grad_untouched():
    """``autograd.grad`` returns the gradient and leaves the buffer the executor writes as it was."""
    mx.random.seed(0)
    net = dense(True)
    _one_step(net)                                 # binds the executor on .grad, fills it
    before = net.weight.grad().asnumpy().copy()
    w = net.weight.data()
    with autograd.record():
        y = net(x_batch(1))
    (g,) = autograd.grad(y, [w])
    np.testing.assert_array_equal(net.weight.grad().asnumpy(), before)
    expected = np.ones((5, 3)).T @ x_batch(1).asnumpy()
    np.testing.assert_allclose(g.asnumpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("grad_req", ["add", "write"])
def test_repeated_backward_follows_grad_req(grad_req):
    """Three steps: 'add' accumulates (own buffer, then added), 'write' keeps the last one."""
    def fn(net):
        for seed in range(3):
            _one_step(net, x_batch(seed))
    imperative, hybridized = twin_grads(fn, grad_req)
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-5)
