"""mx.nd.contrib.rand_zipfian: log-uniform classes with replacement and their expected counts."""
import math

import numpy as np
import pytest

import mxref as mx


def _expected(classes, num_sampled, range_max):
    c = np.asarray(classes, dtype=np.float64)
    return np.log((c + 2) / (c + 1)) / math.log(range_max + 1) * num_sampled


def test_counts_follow_the_formula_and_frequencies_follow_the_distribution():
    mx.random.seed(8)
    true = mx.nd.array([0, 3, 19], dtype="int32")
    sampled, cnt_true, cnt_sampled = mx.nd.contrib.rand_zipfian(true, 20000, 20)
    assert sampled.dtype == np.int64 and sampled.shape == (20000,)
    assert cnt_true.dtype == np.float64 and cnt_sampled.shape == (20000,)
    s = sampled.asnumpy()
    assert s.min() >= 0 and s.max() < 20
    np.testing.assert_allclose(cnt_true.asnumpy(), _expected([0, 3, 19], 20000, 20), rtol=1e-12)
    np.testing.assert_allclose(cnt_sampled.asnumpy(), _expected(s, 20000, 20), rtol=1e-12)
    freq = np.bincount(s, minlength=20)
    np.testing.assert_allclose(freq, _expected(np.arange(20), 20000, 20), rtol=0.1, atol=20)


def test_symbol_form_and_seed_replay():
    out = mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 50, 10)
    ex = mx.sym.Group(list(out)).bind(mx.cpu(), {"t": mx.nd.array([1, 2])})
    mx.random.seed(1)
    a = [o.asnumpy() for o in ex.forward()]
    mx.random.seed(1)
    b = [o.asnumpy() for o in ex.forward()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(a[1], _expected([1, 2], 50, 10), rtol=1e-12)
    np.testing.assert_allclose(a[2], _expected(a[0], 50, 10), rtol=1e-12)
    with pytest.raises(mx.MXNetError, match="true_classes must be an NDArray"):
        mx.nd.contrib.rand_zipfian([1, 2], 5, 10)
