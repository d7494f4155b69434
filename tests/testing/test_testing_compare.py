"""mxref.testing.compare: MXNet's comparison helpers beyond assert_almost_equal."""
import numpy as np
import pytest

import mxref as mx
from mxref.testing import compare


def test_ignore_nan_variants_skip_positions_where_either_side_is_nan():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([1.0, 5.0, np.nan])
    assert compare.almost_equal_ignore_nan(a, b)
    compare.assert_almost_equal_ignore_nan(a, b)
    with pytest.raises(AssertionError):
        compare.assert_almost_equal_ignore_nan(a, np.array([2.0, 0.0, 0.0]))


def test_with_err_tolerates_a_fraction_of_mismatches():
    a = np.zeros(100)
    b = np.zeros(100)
    b[:3] = 1
    compare.assert_almost_equal_with_err(a, b, etol=0.05)
    with pytest.raises(AssertionError, match="3.000000% of the elements differ"):
        compare.assert_almost_equal_with_err(a, b, etol=0.01)
    with pytest.raises(AssertionError):
        compare.assert_almost_equal_with_err(a, b)          # etol 0: every element must match


def test_same_array_tells_views_from_copies():
    a = mx.nd.zeros((2, 3))
    assert compare.same_array(a, a)
    assert compare.same_array(a, a[0:1]) is False or a[0:1].shape != a.shape
    assert not compare.same_array(a, a.copy())
    assert (a.asnumpy() == 0).all()                          # the probe leaves the values alone


def test_effective_dtype_is_the_arrays_own():
    assert compare.effective_dtype(mx.nd.zeros(1)) == np.float32
    assert compare.effective_dtype(np.zeros(1, np.float16)) == np.float16
