"""Random operators' shapes: a missing ``shape`` is unknown, as in MXNet 1.9.1 — a graph infers it
from the consumers, and a bare imperative call without it is an error."""
import math

import numpy as np
import pytest

import mxref as mx
from mxref.test_utils import chi_square_check, gen_buckets_probs_with_ppf


def test_graph_infers_a_missing_shape_from_the_consumer():
    """random.uniform() + x takes x's shape (MXNet 1.9.1: ([(2, 3)], [(2, 3)], []))."""
    s = mx.sym.random.uniform() + mx.sym.var("x")
    assert s.infer_shape(x=(2, 3)) == ([(2, 3)], [(2, 3)], [])
    out = s.bind(mx.cpu(), {"x": mx.nd.zeros((2, 3))}).forward()[0].asnumpy()
    assert out.shape == (2, 3) and (out >= 0).all() and (out < 1).all()
    assert mx.sym.random.normal(shape=(4,)).infer_shape()[1] == [(4,)]


def test_bare_op_without_shape_raises_and_front_end_gives_one_sample():
    with pytest.raises(mx.MXNetError, match="_random_uniform: cannot infer the shape"):
        mx.nd._internal._random_uniform()
    with pytest.raises(mx.MXNetError, match="_random_randint: cannot infer the shape"):
        mx.nd._internal._random_randint(low=0, high=3)
    assert mx.nd.random.normal().shape == (1,)
    assert np.isfinite(mx.nd.random.normal(shape=(2, 2)).asnumpy()).all()


# ---------------------------------------------------------------------------------------------
# The distribution family: _random_<dist> and _random_<dist>_like
# ---------------------------------------------------------------------------------------------

# dist -> (params, mean, variance); 40000 draws put the sample mean within a few hundredths.
MOMENTS = {
    "uniform": ({"low": -1.5, "high": 3.0}, 0.75, 4.5 ** 2 / 12),
    "normal": ({"loc": 10.0, "scale": 0.5}, 10.0, 0.25),
    "gamma": ({"alpha": 9.0, "beta": 0.5}, 4.5, 9.0 * 0.25),
    "exponential": ({"lam": 4.0}, 0.25, 1 / 16),
    "poisson": ({"lam": 4.0}, 4.0, 4.0),
    "negative_binomial": ({"k": 3, "p": 0.4}, 3 * 0.6 / 0.4, 3 * 0.6 / 0.16),
    "generalized_negative_binomial": ({"mu": 2.0, "alpha": 0.3}, 2.0, 2.0 + 0.3 * 4.0),
}


@pytest.mark.parametrize("dist", sorted(MOMENTS))
def test_sampler_moments_dtype_and_seed(dist):
    """Each _random_<dist> has its distribution's mean and variance, float32 by default, and the
    same seed gives the same numbers."""
    params, mean, var = MOMENTS[dist]
    op = getattr(mx.nd._internal, f"_random_{dist}")
    mx.random.seed(11)
    a = op(shape=(200, 200), **params)
    mx.random.seed(11)
    b = op(shape=(200, 200), **params).asnumpy()
    assert a.dtype == np.float32 and a.shape == (200, 200)
    a = a.asnumpy().astype(np.float64)
    np.testing.assert_array_equal(a, b)
    assert abs(a.mean() - mean) < 4 * np.sqrt(var / a.size) + 1e-9
    assert abs(a.var() / var - 1) < 0.05
    assert op(shape=(3,), dtype="float64", **params).dtype == np.float64


@pytest.mark.parametrize("dist", sorted(MOMENTS))
def test_like_sampler_takes_shape_and_dtype_of_data(dist):
    """_random_<dist>_like(data) draws data's shape in data's dtype; data's gradient is zero."""
    params, mean, var = MOMENTS[dist]
    fn = getattr(mx.nd.random, f"{dist}_like")
    x = mx.nd.ones((100, 300), dtype="float64")
    y = fn(x, **params)
    assert y.shape == (100, 300) and y.dtype == np.float64
    assert abs(y.asnumpy().mean() - mean) < 4 * np.sqrt(var / y.size) + 1e-9
    x.attach_grad()
    with mx.autograd.record():
        z = fn(x, **params) * x
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), z.asnumpy() / x.asnumpy())


def test_discrete_samplers_give_whole_numbers_in_float():
    for op, kw in [("_random_poisson", {"lam": 2.5}), ("_random_negative_binomial", {"k": 2, "p": 0.3}),
                   ("_random_generalized_negative_binomial", {"mu": 1.5, "alpha": 0.0})]:
        v = getattr(mx.nd._internal, op)(shape=(1000,), **kw).asnumpy()
        assert v.dtype == np.float32 and (v == np.round(v)).all() and (v >= 0).all()


def test_like_sampler_in_a_graph():
    """mx.sym.random.gamma_like(data) binds, infers data's shape and dtype, and replays a seed."""
    s = mx.sym.random.gamma_like(mx.sym.var("d"), alpha=2.0, beta=3.0)
    assert s.infer_shape(d=(4, 5))[1] == [(4, 5)]
    assert s.infer_type(d="float16")[1] == [np.float16]
    ex = s.bind(mx.cpu(), {"d": mx.nd.zeros((400, 50))})
    mx.random.seed(3)
    a = ex.forward()[0].asnumpy()
    mx.random.seed(3)
    np.testing.assert_array_equal(a, ex.forward()[0].asnumpy())
    assert abs(a.mean() - 6.0) < 0.3


@pytest.mark.parametrize("op, params, message", [
    ("_random_gamma", {"alpha": -1.0}, "alpha and beta must be positive"),
    ("_random_exponential", {"lam": 0.0}, "lam must be positive"),
    ("_random_poisson", {"lam": -2.0}, "lam must be non-negative"),
    ("_random_negative_binomial", {"k": 2, "p": 1.5}, "k must be non-negative and p in \\(0, 1\\]"),
    ("_random_generalized_negative_binomial", {"alpha": -0.5}, "mu and alpha must be non-negative"),
    ("_random_uniform", {"low": 2.0, "high": 1.0}, "low must be less or equal to high"),
])
def test_bad_parameters_fail_at_the_wait(op, params, message):
    """A bad parameter value is the kernel's error, naming the operator, raised at the next wait."""
    y = getattr(mx.nd._internal, op)(shape=(2,), **params)
    with pytest.raises(mx.MXNetError, match=f"{op}: {message}"):
        y.wait_to_read()


def test_like_sampler_refuses_integer_data_and_unknown_arguments():
    with pytest.raises(mx.MXNetError, match="_random_uniform_like: data must be float16"):
        mx.nd.random.uniform_like(mx.nd.zeros((2,), dtype="int32"))
    with pytest.raises(mx.MXNetError, match="unknown argument 'shape'"):
        mx.nd.random.normal_like(mx.nd.zeros((2,)), shape=(3,))


def _erlang_cdf(x, k, theta):
    return 1 - sum(math.exp(-x / theta) * (x / theta) ** n / math.factorial(n) for n in range(k))


def _pmf_buckets(pmf, top):
    """Buckets 0..top-1 and [top, inf) (as the range (top - 0.5, inf)) with their probabilities."""
    probs = [pmf(n) for n in range(top)]
    edges = [(n - 0.5, n + 0.5) for n in range(top)] + [(top - 0.5, np.inf)]
    return edges, probs + [1 - sum(probs)]


def _normal_cdf(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


EDGES = [-np.inf, -1.0, -0.3, 0.3, 1.0, np.inf]
FIT = {
    "normal": (lambda n: mx.nd.random.normal(1.0, 5.0, shape=n),
               [(a * 5 + 1, b * 5 + 1) for a, b in zip(EDGES, EDGES[1:])],
               [_normal_cdf(b) - _normal_cdf(a) for a, b in zip(EDGES, EDGES[1:])]),
    "gamma": (lambda n: mx.nd.random.gamma(3, 2.0, shape=n),
              [(0, 2.0), (2.0, 4.0), (4.0, 6.0), (6.0, 10.0), (10.0, np.inf)],
              [_erlang_cdf(b, 3, 2.0) - _erlang_cdf(a, 3, 2.0) if b < np.inf else 1 - _erlang_cdf(a, 3, 2.0)
               for a, b in [(0, 2.0), (2.0, 4.0), (4.0, 6.0), (6.0, 10.0), (10.0, np.inf)]]),
    "exponential": (lambda n: mx.nd.random.exponential(0.1, shape=n),
                    *gen_buckets_probs_with_ppf(lambda q: -0.1 * math.log(1 - q) if q < 1 else np.inf, 5)),
    "poisson": (lambda n: mx.nd.random.poisson(4.0, shape=n),
                *_pmf_buckets(lambda k: math.exp(k * math.log(4.0) - 4.0 - math.lgamma(k + 1)), 9)),
    "negative_binomial": (lambda n: mx.nd.random.negative_binomial(3, 0.4, shape=n),
                          *_pmf_buckets(lambda x: math.exp(math.lgamma(x + 3) - math.lgamma(x + 1)
                                                           - math.lgamma(3) + 3 * math.log(0.4)
                                                           + x * math.log(0.6)), 12)),
    "generalized_negative_binomial": (  # k = 1/alpha = 2, p = 1/(mu alpha + 1) = 0.4
        lambda n: mx.nd.random.generalized_negative_binomial(3.0, 0.5, shape=n),
        *_pmf_buckets(lambda x: math.exp(math.lgamma(x + 2) - math.lgamma(x + 1) - math.lgamma(2)
                                         + 2 * math.log(0.4) + x * math.log(0.6)), 12)),
}


@pytest.mark.parametrize("dist", sorted(FIT))
def test_chi_square_goodness_of_fit(dist):
    """100000 draws under a fixed seed pass Pearson's chi-square test against the exact bucket
    probabilities (deterministic: the seed fixes the draws)."""
    draw, buckets, probs = FIT[dist]
    mx.random.seed(2024)
    p, obs, exp = chi_square_check(lambda n: draw(n).asnumpy(), buckets, probs, nsamples=100000)
    assert p > 0.01, (p, obs, exp)
