"""An imperative HybridBlock call reuses its dict of parameter arrays (``_forward_imperative``)
only while no Parameter's arrays were replaced: every way of replacing them is seen."""
import numpy as np

import mxref as mx
from mxref import gluon, nd


def _dense():
    net = gluon.nn.Dense(3, in_units=2)
    net.initialize(mx.init.One())
    return net


def test_reinitialized_weights_are_used():
    net, x = _dense(), nd.array([[1.0, 2.0]])
    np.testing.assert_array_equal(net(x).asnumpy(), [[3.0, 3.0, 3.0]])
    net.initialize(mx.init.Constant(2.0), force_reinit=True)
    np.testing.assert_array_equal(net(x).asnumpy(), [[6.0, 6.0, 6.0]])


def test_set_data_and_cast_are_seen():
    net, x = _dense(), nd.array([[1.0, 2.0]])
    net(x)
    net.weight.set_data(nd.full((3, 2), 0.5))
    np.testing.assert_array_equal(net(x).asnumpy(), [[1.5, 1.5, 1.5]])
    net.cast("float64")
    y = net(nd.array([[1.0, 2.0]], dtype="float64"))
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.asnumpy(), [[1.5, 1.5, 1.5]])


def test_a_call_on_another_context_looks_up_again():
    net = gluon.nn.Dense(2, in_units=2)
    net.initialize(mx.init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
    y0 = net(nd.ones((1, 2), ctx=mx.cpu(0)))
    y1 = net(nd.ones((1, 2), ctx=mx.cpu(1)))
    assert y0.context == mx.cpu(0) and y1.context == mx.cpu(1)
    net.weight.data(mx.cpu(1))[:] = 3.0
    np.testing.assert_array_equal(net(nd.ones((1, 2), ctx=mx.cpu(1))).asnumpy(), [[6.0, 6.0]])
    np.testing.assert_array_equal(net(nd.ones((1, 2), ctx=mx.cpu(0))).asnumpy(), [[2.0, 2.0]])


def test_training_steps_update_the_arrays_used():
    net, x = _dense(), nd.array([[1.0, 2.0]])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    outs = []
    for _ in range(3):
        with mx.autograd.record():
            y = net(x)
        y.backward()
        trainer.step(1)
        outs.append(net(x).asnumpy()[0, 0])
    assert outs[0] > outs[1] > outs[2]
