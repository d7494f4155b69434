"""``multi_sum_sq`` and ``multi_lars``: numpy formulas, MXNet 1.9.1's numbers, dtypes, symbols, errors."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def test_multi_sum_sq_is_float32_sums_of_squares():
    """One float32 entry per array, whatever the input dtype (MXNet 1.9.1: [6, 14] for these)."""
    for dtype in ("float16", "float32", "float64"):
        out = mx.nd.multi_sum_sq(mx.nd.ones((2, 3), dtype=dtype), mx.nd.arange(4, dtype=dtype), num_arrays=2)
        assert out.dtype == np.float32 and out.shape == (2,)
        np.testing.assert_array_equal(out.asnumpy(), [6.0, 14.0])
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((5, 5), (9,), (2, 3, 4))]
    out = mx.nd.multi_sum_sq(*[mx.nd.array(a) for a in arrays], num_arrays=3)
    np.testing.assert_allclose(out.asnumpy(), [np.sum(a.astype(np.float64) ** 2) for a in arrays], rtol=1e-5)


def test_multi_lars_formula_and_mxnet_numbers():
    """lr*eta*|w|/(|g|*rescale + wd*|w| + eps) where both norms are positive, else lr (MXNet 1.9.1:
    [0.04543389, 0.2, 0.3] for this case)."""
    out = mx.nd.multi_lars(mx.nd.array([.1, .2, .3]), mx.nd.array([4, 0, 9]), mx.nd.array([1, 1, 0]),
                           mx.nd.array([.1, .1, .1]), eta=0.5, eps=1e-3, rescale_grad=2)
    np.testing.assert_allclose(out.asnumpy(), [0.04543389, 0.2, 0.3], rtol=1e-6)
    rng = np.random.default_rng(1)
    lrs, w2, g2, wds = (rng.uniform(0.1, 1, 6).astype(np.float32) for _ in range(4))
    out = mx.nd.multi_lars(*[mx.nd.array(a) for a in (lrs, w2, g2, wds)], eta=0.01, eps=0.0)
    want = lrs * 0.01 * np.sqrt(w2) / (np.sqrt(g2) + wds * np.sqrt(w2))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


def test_symbols_and_errors():
    """Symbol forms infer the (num_arrays,) float32 output; bad counts and shapes are MXNetErrors."""
    s = mx.sym.multi_sum_sq(mx.sym.var("a"), mx.sym.var("b"), num_arrays=2)
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(2, 3), b=(4,))[1] == [(2,)]
    assert s.infer_type(a="float16", b="float16")[1] == [np.float32]
    lars = mx.sym.multi_lars(*[mx.sym.var(n) for n in "lwgd"], eta=1.0, eps=0.0)
    assert lars.list_arguments() == ["l", "w", "g", "d"]
    with pytest.raises(MXNetError, match="multi_sum_sq: required argument 'num_arrays'"):
        mx.nd.multi_sum_sq(mx.nd.ones(2))
    with pytest.raises(MXNetError, match="multi_lars: required argument 'eta'"):
        mx.nd.multi_lars(*[mx.nd.ones(2)] * 4, eps=0.0)
    with pytest.raises(MXNetError, match="inconsistent"):
        mx.nd.multi_lars(mx.nd.ones(2), mx.nd.ones(3), mx.nd.ones(2), mx.nd.ones(2), eta=1.0, eps=0.0)
