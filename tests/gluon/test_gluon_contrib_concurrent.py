"""gluon.contrib.nn: Concurrent, HybridConcurrent and Identity join their children's outputs."""
import numpy as np

import mxref as mx
from mxref.gluon import nn
from mxref.gluon.contrib.nn import Concurrent, HybridConcurrent, Identity


def _dense(units, value):
    return nn.Dense(units, in_units=3, weight_initializer=mx.init.Constant(value), bias_initializer="zeros")


def test_hybrid_concurrent_concatenates_along_axis_and_hybridizes():
    net = HybridConcurrent(axis=1)
    net.add(Identity(), _dense(2, 1.0), _dense(1, 2.0))
    net.initialize()
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    want = np.concatenate([x.asnumpy(), np.full((2, 2), [[6], [15]]), np.array([[12.0], [30.0]])], axis=1)
    np.testing.assert_allclose(net(x).asnumpy(), want)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want)
    assert [k.rsplit("_", 1)[1] for k in net.collect_params()] == ["weight", "bias"] * 2


def test_concurrent_runs_plain_blocks_and_gradients_flow_through_identity():
    net = Concurrent(axis=-1)
    net.add(Identity(), nn.Lambda(lambda x: 2 * x))
    x = mx.nd.array([[1.0, 2.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = net(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), [[1, 2, 2, 4]])
    np.testing.assert_allclose(x.grad.asnumpy(), [[3, 3]])
