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
