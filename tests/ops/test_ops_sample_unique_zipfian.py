"""_sample_unique_zipfian: distinct log-uniform classes per row and the number of draws it took."""
import numpy as np
import pytest

import mxref as mx


def test_rows_are_distinct_and_tries_match_mxnet_reference_counts():
    """range_max 793472, 8192 per row: every row distinct, 14500 < tries < 17000 (MXNet's test)."""
    mx.random.seed(0)
    classes, tries = mx.nd._internal._sample_unique_zipfian(793472, shape=(4, 8192))
    assert classes.dtype == np.int64 and tries.dtype == np.int64
    assert classes.shape == (4, 8192) and tries.shape == (4,)
    c = classes.asnumpy()
    assert all(np.unique(row).size == 8192 for row in c) and c.min() >= 0 and c.max() < 793472
    assert ((tries.asnumpy() > 14500) & (tries.asnumpy() < 17000)).all()


def test_small_classes_are_more_likely_and_all_classes_when_n_is_range_max():
    mx.random.seed(1)
    c, t = mx.nd._internal._sample_unique_zipfian(1000, shape=(200, 1))
    # P(class 0) = log 2 / log 1001, about 0.1; classes above 500 together about 0.1 too
    assert 0.05 < (c.asnumpy() == 0).mean() < 0.16 and (t.asnumpy() == 1).all()
    full, _ = mx.nd._internal._sample_unique_zipfian(6, shape=(3, 6))
    np.testing.assert_array_equal(np.sort(full.asnumpy(), axis=1), np.tile(np.arange(6), (3, 1)))


def test_shape_rule_and_errors():
    s = mx.sym._internal._sample_unique_zipfian(range_max=10, shape=(3, 4))
    assert s.infer_shape() == ([], [(3, 4), (3,)], [])
    assert s.infer_type()[1] == [np.int64, np.int64]
    with pytest.raises(mx.MXNetError, match="shape must be 2-D"):
        mx.nd._internal._sample_unique_zipfian(10, shape=(3,))
    bad, _ = mx.nd._internal._sample_unique_zipfian(3, shape=(1, 4))
    with pytest.raises(mx.MXNetError, match="num_sampled \\(4\\) cannot exceed"):
        bad.wait_to_read()
