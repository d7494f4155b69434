"""``all_finite``, ``multi_all_finite`` and ``reset_arrays`` (the AMP step helpers)."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_all_finite_flags_inf_and_nan(dtype):
    """[1.] when every value is finite, [0.] with an inf or a nan; the flag is float32 of shape (1,)."""
    for values, want in (([1, 2], 1.0), ([1, np.inf], 0.0), ([np.nan, 0], 0.0), ([-np.inf], 0.0)):
        out = mx.nd.all_finite(mx.nd.array(values, dtype=dtype))
        assert out.dtype == np.float32 and out.shape == (1,)
        assert out.asscalar() == want


def test_multi_all_finite_and_init_output_accumulates():
    """Over several arrays; ``init_output=False`` only clears the flag it is given via out=."""
    a, bad = mx.nd.ones((2, 3)), mx.nd.array([1.0, np.nan])
    assert mx.nd.multi_all_finite(a, a, num_arrays=2).asscalar() == 1.0
    assert mx.nd.multi_all_finite(a, bad, num_arrays=2).asscalar() == 0.0
    flag = mx.nd.ones(1)
    mx.nd.all_finite(a, init_output=False, out=flag)
    assert flag.asscalar() == 1.0
    mx.nd.all_finite(bad, init_output=False, out=flag)
    mx.nd.all_finite(a, init_output=False, out=flag)       # stays cleared
    assert flag.asscalar() == 0.0
    mx.nd.multi_all_finite(a, num_arrays=1, out=flag)      # init_output=True resets it
    assert flag.asscalar() == 1.0
    s = mx.sym.multi_all_finite(mx.sym.var("x"), mx.sym.var("y"), num_arrays=2)
    assert s.list_arguments() == ["x", "y"] and s.infer_shape(x=(2,), y=(3, 3))[1] == [(1,)]


def test_reset_arrays_zeroes_in_place_and_returns_nothing():
    """Every input set to zero (ordered by the engine like any write); MXNet returns []."""
    x, y = mx.nd.ones((2, 3)), mx.nd.arange(4, dtype="int32")
    z = x * 2       # queued before the reset: must read the old values
    assert mx.nd.reset_arrays(x, y, num_arrays=2) == []
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(y.asnumpy(), np.zeros(4))
    np.testing.assert_array_equal(z.asnumpy(), np.full((2, 3), 2.0))
    with pytest.raises(MXNetError, match="reset_arrays: num_arrays must be >= 1"):
        mx.nd.reset_arrays(num_arrays=0)
