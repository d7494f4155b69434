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
