"""_sample_uniform / _sample_normal: one distribution per element of the parameter arrays."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def test_uniform_draws_per_element_with_mxnet_shapes_and_dtype():
    """Output shape is params.shape + shape; float32 by default (also for float64 parameters)."""
    low = mx.nd.array([[0, 10], [100, 1000]], dtype="float64")
    high = low + 1
    s = mx.nd.random.uniform(low, high, shape=(500,))
    assert s.shape == (2, 2, 500) and s.dtype == np.float32
    v = s.asnumpy()
    lo = low.asnumpy()[..., None]
    assert ((v >= lo) & (v < lo + 1)).all()
    np.testing.assert_allclose(v.mean(axis=-1), low.asnumpy() + 0.5, atol=0.06)
    assert mx.nd.random.uniform(low, high).shape == (2, 2)
    assert mx.nd.random.uniform(low, high, shape=3, dtype="float16").dtype == np.float16


def test_normal_statistics_per_element_and_seed_replays():
    """Each element's samples follow its own (mu, sigma); mx.random.seed replays the draws."""
    mu, sigma = mx.nd.array([0, 5, -3]), mx.nd.array([1, 0.5, 2])
    mx.random.seed(7)
    a = mx.nd.random.normal(mu, sigma, shape=(4000,)).asnumpy()
    mx.random.seed(7)
    b = mx.nd.random.normal(mu, sigma, shape=(4000,)).asnumpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a.mean(axis=1), [0, 5, -3], atol=0.15)
    np.testing.assert_allclose(a.std(axis=1), [1, 0.5, 2], rtol=0.08)


def test_bad_parameters_are_clear_errors():
    """Parameter arrays of different shapes fail at once; a negative scale at the next wait."""
    with pytest.raises(MXNetError, match="one shape"):
        mx.nd.random.uniform(mx.nd.zeros((2, 2)), mx.nd.ones((2,)))
    out = mx.nd.random.normal(mx.nd.zeros((2,)), mx.nd.array([1, -1]))
    with pytest.raises(MXNetError, match="scale must be non-negative"):
        out.wait_to_read()
    with pytest.raises(MXNetError, match="all be numbers or all be NDArrays"):
        mx.nd.random.uniform(mx.nd.zeros((2,)), 1)


def test_symbolic_sampler_binds_and_passes_zero_gradients():
    """mx.sym.random.normal(Symbols) runs through an executor; its parameters get zero gradients
    (MXNet 1.9.1 registers MakeZeroGradNodes: simple_bind with grad_req='write' works)."""
    s = mx.sym.random.normal(loc=mx.sym.var("a"), scale=mx.sym.var("b"), shape=(2,))
    assert s.infer_shape(a=(3,), b=(3,))[1] == [(3, 2)]
    ex = s.bind(mx.cpu(), {"a": mx.nd.array([0, 100, 1000]), "b": mx.nd.zeros((3,))})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [[0, 0], [100, 100], [1000, 1000]])
    ex = (s + mx.sym.var("c")).simple_bind(mx.cpu(), a=(3,), b=(3,), c=(3, 2), grad_req="write")
    ex.arg_dict["b"][:] = 1
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((3, 2)))
    assert (ex.grad_dict["a"].asnumpy() == 0).all() and (ex.grad_dict["b"].asnumpy() == 0).all()
    np.testing.assert_array_equal(ex.grad_dict["c"].asnumpy(), np.ones((3, 2)))
