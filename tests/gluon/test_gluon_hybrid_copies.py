"""The copies a hybridized call makes (inputs in, head gradients in) take views and keep values apart."""
import numpy as np

import mxref as mx
from mxref import autograd, gluon


def test_hybridized_call_on_views_matches_imperative():
    """Row slices of one array as inputs, twice in a row: each call sees its own rows, gradients agree."""
    rng = np.random.default_rng(0)
    big = mx.nd.array(rng.standard_normal((6, 5)))
    results = []
    for hybrid in (False, True):
        net = gluon.nn.Dense(3, in_units=5)
        net.initialize(mx.init.Constant(0.1))
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        outs = []
        for rows in (slice(0, 2), slice(2, 4)):
            with autograd.record():
                y = net(big[rows])
            y.backward(mx.nd.array(np.arange(6.0).reshape(2, 3))[0:2])
            outs.append((y.asnumpy(), net.weight.grad().asnumpy().copy()))
        results.append(outs)
    for (y0, g0), (y1, g1) in zip(*results):
        np.testing.assert_allclose(y1, y0, rtol=1e-6)
        np.testing.assert_allclose(g1, g0, rtol=1e-6)
    assert not np.allclose(results[1][0][0], results[1][1][0])


def test_executor_backward_head_gradient_is_copied():
    """The executor keeps its own head-gradient array: changing the caller's array later changes nothing."""
    x = mx.sym.Variable("x")
    ex = (x * 2).simple_bind(mx.cpu(), x=(2, 2))
    ex.arg_dict["x"][:] = 1
    ex.forward(is_train=True)
    head = mx.nd.ones((2, 2))
    ex.backward(head)
    head[:] = 100
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), 2 * np.ones((2, 2)))
    ex.backward(mx.nd.array(np.full((4, 2), 3.0))[1:3])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), 6 * np.ones((2, 2)))
