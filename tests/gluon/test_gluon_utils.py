"""gluon.utils: split_data / split_and_load over contexts and clip_global_norm, as MXNet 1.9.1 does them."""
import numpy as np
import pytest

import mxref as mx
from mxref import gluon

utils = gluon.utils


def test_split_and_load_even_and_uneven():
    """Batches split along batch_axis; uneven splits give the first pieces one more row."""
    data = np.arange(20, dtype=np.float32).reshape(5, 4)
    ctxs = [mx.cpu(0), mx.cpu(1)]
    with pytest.raises(ValueError, match="cannot be evenly split"):
        utils.split_and_load(data, ctxs)
    parts = utils.split_and_load(data, ctxs, even_split=False)
    assert [p.shape for p in parts] == [(3, 4), (2, 4)]
    assert [p.context for p in parts] == ctxs
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), data)
    cols = utils.split_data(mx.nd.array(data), 2, batch_axis=1)
    np.testing.assert_array_equal(cols[1].asnumpy(), data[:, 2:])
    single = utils.split_and_load(mx.nd.array(data), [mx.cpu(3)])
    assert len(single) == 1 and single[0].context == mx.cpu(3)


def test_clip_global_norm():
    """The joint norm is returned; arrays are scaled to max_norm only when above it."""
    a, b = mx.nd.ones((2, 2)) * 3, mx.nd.ones((3,))
    norm = utils.clip_global_norm([a, b], 1.0)
    assert norm == pytest.approx(np.sqrt(36 + 3), rel=1e-6)
    total = np.sqrt((a.asnumpy() ** 2).sum() + (b.asnumpy() ** 2).sum())
    assert total == pytest.approx(1.0, rel=1e-5)
    c = mx.nd.array([0.3, 0.4])
    assert utils.clip_global_norm([c], 1.0) == pytest.approx(0.5, rel=1e-6)
    np.testing.assert_allclose(c.asnumpy(), [0.3, 0.4], rtol=1e-6)
    lazy = utils.clip_global_norm([mx.nd.array([3.0, 4.0])], 1.0, check_isfinite=False)
    assert isinstance(lazy, mx.nd.NDArray) and lazy.asscalar() == pytest.approx(5.0)
    with pytest.warns(UserWarning, match="nan or inf"):
        utils.clip_global_norm([mx.nd.array([np.inf, 1.0])], 1.0)


def test_clip_global_norm_of_row_sparse_arrays():
    """Sparse arrays count by their norm (they have no flat view); the result is the dense one's."""
    dense = [mx.nd.ones((3, 3)), mx.nd.ones((4, 4))]
    sparse = [a.tostype("row_sparse") for a in dense]
    assert utils.clip_global_norm(sparse, 1.0) == pytest.approx(5.0)
    utils.clip_global_norm(dense, 1.0)
    for s, d in zip(sparse, dense):
        assert s.stype == "row_sparse"
        np.testing.assert_allclose(s.asnumpy(), d.asnumpy(), rtol=1e-6)


def test_check_sha1(tmp_path):
    """check_sha1 compares a file's SHA-1 with the expected digest."""
    f = tmp_path / "x.bin"
    f.write_bytes(b"mxref")
    import hashlib
    assert utils.check_sha1(str(f), hashlib.sha1(b"mxref").hexdigest())
    assert not utils.check_sha1(str(f), "0" * 40)
