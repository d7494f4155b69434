"""mx.nd.random / mx.random: MXNet's signatures, seeding reproducibility, NDArray-parameter routing,
and a negative scale reported at the wait (semantics 16)."""
import inspect

import numpy as np
import pytest

import mxref as mx
from mxref.base import _Null


def _params(fn):
    return str(inspect.signature(fn).replace(return_annotation=inspect.Signature.empty))


def test_signatures_match_mxnet():
    tail = "shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs)"
    assert _params(mx.nd.random.uniform) == "(low=0, high=1, " + tail
    assert _params(mx.nd.random.normal) == "(loc=0, scale=1, " + tail
    assert list(inspect.signature(mx.nd.random.randint).parameters)[:3] == ["low", "high", "shape"]
    assert inspect.signature(mx.nd.random.randint).parameters["shape"].default is _Null
    assert mx.random.uniform is mx.nd.random.uniform and mx.random.shuffle is mx.nd.random.shuffle


def test_seed_replays_and_values_are_in_range(any_engine):
    mx.random.seed(42)
    u1 = mx.nd.random.uniform(-2, 3, shape=(50,)).asnumpy()
    n1 = mx.nd.random.normal(1, 0.5, shape=(2, 3), dtype="float64").asnumpy()
    mx.random.seed(42)
    u2 = mx.nd.random.uniform(-2, 3, shape=(50,)).asnumpy()
    n2 = mx.nd.random.normal(1, 0.5, shape=(2, 3), dtype="float64").asnumpy()
    np.testing.assert_array_equal(u1, u2)
    np.testing.assert_array_equal(n1, n2)
    assert u1.min() >= -2 and u1.max() < 3 and n1.dtype == np.float64
    r = mx.nd.random.randint(3, 7, shape=(100,)).asnumpy()
    assert r.min() >= 3 and r.max() < 7


def test_ctx_out_and_shuffle(any_engine):
    u = mx.nd.random.uniform(shape=(3,), ctx=mx.cpu(1))
    assert u.context == mx.cpu(1)
    out = mx.nd.zeros((4,))
    assert mx.nd.random.normal(shape=(4,), out=out) is out
    rows = mx.nd.arange(12).reshape((6, 2))
    shuffled = mx.random.shuffle(rows).asnumpy()
    assert sorted(shuffled[:, 0].tolist()) == [0, 2, 4, 6, 8, 10]
    np.testing.assert_array_equal(shuffled[:, 1] - shuffled[:, 0], np.ones(6))


def test_negative_scale_raises_at_the_wait(any_engine):
    bad = mx.nd.random.normal(0, -1, shape=(2,))
    with pytest.raises(mx.MXNetError, match="scale"):
        bad.asnumpy()
    assert mx.nd.random.uniform(shape=(2,)).shape == (2,)


def test_mixed_scalar_and_ndarray_parameters_are_rejected():
    with pytest.raises(mx.MXNetError, match="all be numbers or all be NDArrays"):
        mx.nd.random.uniform(0, mx.nd.ones((2,)))


def test_no_shape_draws_one_sample_or_fills_out():
    """As MXNet 1.9.1: uniform()/normal()/randint(a, b) without shape give shape (1,) (an explicit
    shape is kept), and with out= but no shape the draw takes out's shape."""
    assert mx.nd.random.uniform().shape == (1,)
    assert mx.nd.random.normal(2, 0.5).shape == (1,)
    r = mx.nd.random.randint(0, 5)
    assert r.shape == (1,) and r.dtype == np.int32 and 0 <= r.asnumpy()[0] < 5
    assert mx.nd.random.uniform(dtype="float64").dtype == np.float64
    out = mx.nd.zeros((2, 3))
    mx.random.seed(3)
    assert mx.nd.random.uniform(out=out) is out
    vals = out.asnumpy()
    assert vals.shape == (2, 3) and (vals > 0).all() and (vals < 1).all()
    with pytest.raises(mx.MXNetError, match="low and high must be numbers"):
        mx.nd.random.randint(mx.nd.ones((1,)), 3)


def test_creation_ops_called_without_ctx():
    """The generated creation/random ops take ctx as an optional keyword (the current context)."""
    z = mx.nd._internal._zeros(shape=(2,))
    assert z.shape == (2,) and z.context == mx.current_context()
    assert mx.nd._internal._full(shape=(1,), value=2).asnumpy().tolist() == [2.0]
    assert mx.nd.random_uniform(shape=(3,)).shape == (3,)


def test_every_mxnet_front_end_function_is_there_with_its_signature():
    """mx.nd.random and mx.random carry MXNet 1.9.1's sampler set; mx.random's are the same objects."""
    names = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
             "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]
    assert sorted(mx.nd.random.__all__) == sorted(names)
    for n in names:
        assert getattr(mx.random, n) is getattr(mx.nd.random, n)
    for n in ["uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial",
              "generalized_negative_binomial"]:
        assert callable(getattr(mx.nd.random, n + "_like"))
    tail = "shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs)"
    assert _params(mx.nd.random.exponential) == "(scale=1, " + tail
    assert _params(mx.nd.random.gamma) == "(alpha=1, beta=1, " + tail
    assert _params(mx.nd.random.negative_binomial) == "(k=1, p=1, " + tail
    assert _params(mx.nd.random.generalized_negative_binomial) == "(mu=1, alpha=1, " + tail
    assert _params(mx.nd.random.multinomial) == \
        "(data, shape=_Null, get_prob=False, out=None, dtype='int32', **kwargs)"
    assert _params(mx.nd.random.randn) == "(*shape, **kwargs)"


def test_exponential_takes_a_scale_and_randn_a_positional_shape():
    """exponential(scale) has mean scale (the operator gets lam = 1/scale), also per element;
    randn(2, 3, loc=, scale=) draws N(loc, scale^2) with shape (2, 3), or per element."""
    mx.random.seed(2)
    e = mx.nd.random.exponential(0.25, shape=(40000,)).asnumpy()
    assert abs(e.mean() - 0.25) < 0.01
    e2 = mx.nd.random.exponential(mx.nd.array([1.0, 8.0]), shape=20000).asnumpy()
    np.testing.assert_allclose(e2.mean(axis=1), [1.0, 8.0], rtol=0.05)
    r = mx.nd.random.randn(300, 200, loc=10, scale=0.5, dtype="float64")
    assert r.shape == (300, 200) and r.dtype == np.float64
    assert abs(r.asnumpy().mean() - 10) < 0.01 and abs(r.asnumpy().std() - 0.5) < 0.01
    rp = mx.nd.random.randn(2, loc=mx.nd.array([0.0, 5.0]), scale=mx.nd.array([1.0, 1.0]))
    assert rp.shape == (2, 2)


def test_same_seed_same_numbers_on_both_engines():
    """mx.random.seed(s) gives the same draws under NaiveEngine and ThreadedEnginePerDevice."""
    from mxref import engine

    old = engine.get().name
    draws = []
    try:
        for kind in ("NaiveEngine", "ThreadedEnginePerDevice"):
            engine.set_engine(kind)
            mx.random.seed(99)
            draws.append(np.concatenate([
                mx.nd.random.gamma(2.0, 3.0, shape=(50,)).asnumpy(),
                mx.nd.random.poisson(mx.nd.array([1.0, 30.0]), shape=10).asnumpy().ravel(),
                mx.nd.random.multinomial(mx.nd.array([0.2, 0.8]), shape=20).asnumpy().astype("f4")]))
    finally:
        engine.set_engine(old)
    np.testing.assert_array_equal(draws[0], draws[1])


def test_seed_for_one_context_gives_every_device_the_same_stream():
    """seed(s, ctx=c) draws the same numbers on any device of c's kind; seed(s) gives each device
    its own stream (MXNet's MXRandomSeedContext / MXRandomSeed)."""
    a, b = mx.cpu(0), mx.cpu(1)
    mx.random.seed(7, ctx=a)
    mx.random.seed(7, ctx=b)
    np.testing.assert_array_equal(mx.nd.random.uniform(shape=(8,), ctx=a).asnumpy(),
                                  mx.nd.random.uniform(shape=(8,), ctx=b).asnumpy())
    mx.random.seed(7)
    assert not np.array_equal(mx.nd.random.uniform(shape=(8,), ctx=a).asnumpy(),
                              mx.nd.random.uniform(shape=(8,), ctx=b).asnumpy())
    mx.random.seed(7, ctx="all")
    with pytest.raises(ValueError, match="seed_state must be int"):
        mx.random.seed(1.5)
