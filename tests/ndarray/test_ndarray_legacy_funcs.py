"""concatenate, onehot_encode, contrib.isinf/isfinite/isnan, NDArray.reshape errors and the
reshape_like method (mxref/ndarray/legacy_funcs.py, ndarray.py, methods.py)."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def test_concatenate_matches_numpy():
    rng = np.random.RandomState(0)
    parts = [rng.rand(2, n, 3).astype(np.float32) for n in (3, 1, 2)]
    out = mx.nd.concatenate([mx.nd.array(p) for p in parts], axis=1)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(parts, axis=1))
    one = mx.nd.ones((2,))
    assert mx.nd.concatenate([one], always_copy=False) is one
    with pytest.raises(MXNetError, match="concatenate: array 1"):
        mx.nd.concatenate([mx.nd.ones((2, 2)), mx.nd.ones((3, 3))], axis=1)


def test_onehot_encode_writes_out():
    out = mx.nd.full((3, 4), 7)
    res = mx.nd.onehot_encode(mx.nd.array([1, 0, 3]), out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4, dtype=np.float32)[[1, 0, 3]])
    with pytest.raises(MXNetError, match="onehot_encode"):
        mx.nd.onehot_encode(mx.nd.array([1, 0]), out)


def test_contrib_isinf_isfinite_isnan():
    x = mx.nd.array([1.0, np.inf, -np.inf, np.nan, 0.0])
    v = x.asnumpy()
    np.testing.assert_array_equal(mx.nd.contrib.isinf(x).asnumpy(), np.isinf(v))
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(x).asnumpy(), np.isfinite(v))
    np.testing.assert_array_equal(mx.nd.contrib.isnan(x).asnumpy(), np.isnan(v))


def test_reshape_size_mismatch_is_value_error():
    """NDArray.reshape: a different size is a ValueError (MXNet checks it in Python)."""
    t = mx.nd.ones((2, 3, 5))
    with pytest.raises(ValueError, match="Cannot reshape array of size 30"):
        t.reshape((2, 3))
    assert t.reshape(-1, 0, reverse=True).shape == (6, 5)


def test_reshape_like_method_is_the_operator():
    """a.reshape_like(rhs, ...) is mx.nd.reshape_like(a, rhs, ...), keyword arguments included."""
    a = mx.nd.array(np.arange(30).reshape(5, 3, 2))
    out = a.reshape_like(rhs=mx.nd.ones((6, 5)))
    assert out.shape == (6, 5)
    part = a.reshape_like(mx.nd.ones((15, 2)), lhs_begin=0, lhs_end=2, rhs_begin=0, rhs_end=1)
    assert part.shape == (15, 2)
