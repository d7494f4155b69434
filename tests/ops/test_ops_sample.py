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


# dist -> (parameter arrays by MXNet's front-end names, mean(params), variance(params))
PER_ELEMENT = {
    "gamma": ({"alpha": [0.5, 9.0], "beta": [1.0, 0.5]}, lambda a, b: a * b, lambda a, b: a * b * b),
    "exponential": ({"scale": [1.0, 0.25]}, lambda s: s, lambda s: s * s),
    "poisson": ({"lam": [0.5, 25.0]}, lambda lam: lam, lambda lam: lam),
    "negative_binomial": ({"k": [3.0, 6.0], "p": [0.4, 0.84]}, lambda k, p: k * (1 - p) / p,
                          lambda k, p: k * (1 - p) / p ** 2),
    "generalized_negative_binomial": ({"mu": [2.0, 1.3], "alpha": [1.0, 0.2]}, lambda mu, a: mu,
                                      lambda mu, a: mu + a * mu * mu),
}


@pytest.mark.parametrize("dist", sorted(PER_ELEMENT))
def test_every_element_draws_from_its_own_distribution(dist):
    """mx.nd.random.<dist>(NDArrays, shape) is _sample_<dist>: shape (2, 20000), each row with its
    own mean and variance; float32 unless dtype says otherwise; a seed replays it."""
    params, mean, var = PER_ELEMENT[dist]
    nd_params = {k: mx.nd.array(v, dtype="float64") for k, v in params.items()}
    fn = getattr(mx.nd.random, dist)
    mx.random.seed(5)
    s = fn(**nd_params, shape=(20000,))
    mx.random.seed(5)
    np.testing.assert_array_equal(s.asnumpy(), fn(**nd_params, shape=(20000,)).asnumpy())
    assert s.shape == (2, 20000) and s.dtype == np.float32
    v = s.asnumpy().astype(np.float64)
    for i in range(2):
        args = [params[k][i] for k in params]
        m, var_i = mean(*args), var(*args)
        assert abs(v[i].mean() - m) < 5 * np.sqrt(var_i / v.shape[1]), (i, v[i].mean(), m)
        assert abs(v[i].var() / var_i - 1) < 0.1
    assert fn(**nd_params, dtype="float16").dtype == np.float16


def test_sample_ops_have_mxnet_input_names_and_aliases():
    """The parameter arrays keep MXNet's input names; sample_<dist> is an alias of _sample_<dist>."""
    names = {"_sample_exponential": ["lam"], "_sample_gamma": ["alpha", "beta"],
             "_sample_poisson": ["lam"], "_sample_negative_binomial": ["k", "p"],
             "_sample_generalized_negative_binomial": ["mu", "alpha"],
             "_sample_normal": ["mu", "sigma"], "_sample_uniform": ["low", "high"]}
    for op, args in names.items():
        s = getattr(mx.sym._internal, op)(*[mx.sym.var(a) for a in args], shape=(3,))
        assert s.list_arguments() == args
        assert s.infer_shape(**{a: (2, 4) for a in args})[1] == [(2, 4, 3)]
        assert mx.nd.op.__dict__.get(op[1:]) is not None or hasattr(mx.nd, op[1:])


def test_sample_shape_and_dtype_errors():
    with pytest.raises(MXNetError, match="_sample_gamma: the parameter arrays must have one dtype"):
        mx.nd.random.gamma(mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float64"))
    with pytest.raises(MXNetError, match="_sample_poisson: shape parameter must be non-zero"):
        mx.nd.random.poisson(mx.nd.ones((2,)), shape=(0,))
    bad = mx.nd.random.exponential(mx.nd.array([1.0, -1.0]))
    with pytest.raises(MXNetError, match="_sample_exponential: lam must be positive"):
        bad.wait_to_read()
