"""Imperative model parallelism: ``as_in_context`` / ``copyto`` between devices is recorded as a
``_CrossDeviceCopy``, so gradients flow back to the device each value came from (both backward
paths: the tuned ``autograd`` and the plain ``autograd_plain``)."""
import numpy as np
import pytest

import mxref as mx
from mxref.ndarray import imperative


@pytest.fixture(params=[False, True], ids=["tuned", "plain"])
def paths(request):
    with imperative.plain_paths(request.param):
        yield request.param


@pytest.fixture(params=["NaiveEngine", "ThreadedEnginePerDevice"], autouse=True)
def engine_type(request):
    old = mx.engine.get().name
    mx.engine.set_engine(request.param)
    yield request.param
    mx.engine.set_engine(old)


def two_device_loss(x, w1, w2, ctxs):
    h = mx.nd.tanh(mx.nd.dot(x, w1))
    h = h.as_in_context(ctxs[1])
    y = mx.nd.dot(h, w2)
    return (y * y).sum()


def test_gradients_flow_back_across_devices(paths):
    rng = np.random.RandomState(0)
    xv, w1v, w2v = rng.randn(5, 4), rng.randn(4, 3), rng.randn(3, 2)
    results = []
    for ctxs in ([mx.cpu(0), mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        x = mx.nd.array(xv, ctx=ctxs[0])
        w1 = mx.nd.array(w1v, ctx=ctxs[0])
        w2 = mx.nd.array(w2v, ctx=ctxs[1])
        for a in (w1, w2):
            a.attach_grad()
        with mx.autograd.record():
            loss = two_device_loss(x, w1, w2, ctxs)
        loss.backward()
        assert w1.grad.context == ctxs[0] and w2.grad.context == ctxs[1]
        results.append((loss.asnumpy(), w1.grad.asnumpy(), w2.grad.asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_recorded_copy_is_a_cross_device_copy_whose_gradient_goes_back(paths):
    x = mx.nd.array(np.arange(6.0).reshape(2, 3), ctx=mx.cpu(2))
    x.attach_grad()
    with mx.autograd.record():
        y = x.copyto(mx.cpu(1))
        z = (y * 3).sum()
    node = mx.autograd._live_entry(y).node
    assert node.op.name == "_CrossDeviceCopy" and node.params == {"src": "cpu(2)", "dst": "cpu(1)"}
    z.backward()
    assert x.grad.context == mx.cpu(2)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 3), 3.0))
    # grad_req='add' accumulates on the source device too
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            z = (x.as_in_context(mx.cpu(0)) ** 2).sum()
        z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), 4 * np.arange(6.0).reshape(2, 3))
