"""cumsum / diag / _linspace / _histogram and khatri_rao / depth_to_space / space_to_depth /
_split_v2: MXNet 1.9.1's values and dtypes, gradients, symbols and errors."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, run_op

import mxref as mx
from mxref.base import MXNetError

M = np.array([[1, 2, 3], [4, 5, 6]], np.float32)


def test_cumsum_axes_and_dtypes():
    """Flattened by default; the int dtypes stay (MXNet does not widen); negative axis works."""
    np.testing.assert_array_equal(run_op("cumsum", M)[0], [1, 3, 6, 10, 15, 21])
    np.testing.assert_array_equal(run_op("_np_cumsum", M, axis=-1)[0], [[1, 3, 6], [4, 9, 15]])
    (c,) = run_op("cumsum", M, axis=0, dtype="float64")
    assert c.dtype == np.float64
    for dt in (np.int8, np.int32, np.uint8):
        assert run_op("cumsum", M.astype(dt))[0].dtype == dt
    with pytest.raises(MXNetError, match="cumsum: axis 2"):
        run_op("cumsum", M, axis=2)
    check_numeric_grad("cumsum", M.astype(np.float64), axis=1)
    check_numeric_grad("cumsum", M.astype(np.float64))


def test_diag_builds_and_extracts():
    """The docs examples, an N-D diagonal, the gradient both ways, and a missing diagonal."""
    np.testing.assert_array_equal(run_op("diag", M, k=1)[0], [2, 6])
    np.testing.assert_array_equal(run_op("diag", M, k=-1)[0], [4])
    np.testing.assert_array_equal(run_op("diag", np.array([1, 2.0]), k=-1)[0],
                                  [[0, 0, 0], [1, 0, 0], [0, 2, 0]])
    cube = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(run_op("diag", cube, k=1, axis1=0, axis2=2)[0], [[1, 14], [5, 18], [9, 22]])
    with pytest.raises(MXNetError, match="diag: diagonal k=5 does not exist"):
        run_op("diag", M, k=5)
    check_numeric_grad("diag", np.array([1.0, 2, 3]), k=1)
    check_numeric_grad("diag", cube, k=-1, axis1=2, axis2=1)


def test_linspace_values_and_int_truncation():
    """Values computed in double then cast (ints truncate, as MXNet); num=1; a negative num."""
    np.testing.assert_array_equal(run_op("_linspace", start=0, stop=1, num=5)[0], [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_allclose(run_op("_linspace", start=0, stop=1, num=5, endpoint=False)[0],
                               [0, 0.2, 0.4, 0.6, 0.8], rtol=1e-7)
    (i,) = run_op("_linspace", start=0, stop=10, num=4, dtype="int32")
    assert i.dtype == np.int32 and list(i) == [0, 3, 6, 10]
    assert list(run_op("_linspace", start=2, stop=3, num=1)[0]) == [2]
    with pytest.raises(MXNetError, match="num must be non-negative"):
        run_op("_linspace", start=0, stop=1, num=-1)


def test_histogram_uniform_and_given_edges():
    """MXNet's docs example, the closed last bin, values outside ignored, int edges truncated."""
    h = np.array([[0, 1], [2, 2], [3, 4]], np.float32)
    counts, edges = run_op("_histogram", h, bin_cnt=5, range=(0, 5))
    assert counts.dtype == np.int64 and edges.dtype == np.float32
    np.testing.assert_array_equal(counts, [1, 1, 2, 1, 1])
    np.testing.assert_array_equal(edges, [0, 1, 2, 3, 4, 5])
    counts, _ = run_op("_histogram", h, np.array([0, 2.1, 3], np.float32))
    np.testing.assert_array_equal(counts, [4, 1])
    counts, _ = run_op("_histogram", np.array([0, 5, 5, -1, 6], np.float32), bin_cnt=5, range="(0, 5)")
    np.testing.assert_array_equal(counts, [1, 0, 0, 0, 2])
    counts, edges = run_op("_histogram", h.astype(np.int32), bin_cnt=2, range=(0, 5))
    np.testing.assert_array_equal(edges, [0, 2, 5])
    np.testing.assert_array_equal(counts, [2, 4])
    with pytest.raises(MXNetError, match="bin_cnt and range"):
        run_op("_histogram", h, bin_cnt=5)


def test_khatri_rao():
    """The docs example, one matrix, and mismatched columns."""
    a, b = np.array([[1, -1], [2, -3]], np.float32), np.array([[1, 4], [2, 5], [3, 6]], np.float32)
    np.testing.assert_array_equal(run_op("khatri_rao", a, b, num_args=2)[0],
                                  [[1, -4], [2, -5], [3, -6], [2, -12], [4, -15], [6, -18]])
    np.testing.assert_array_equal(mx.nd.khatri_rao(mx.nd.array(a)).asnumpy(), a)
    with pytest.raises(MXNetError, match="khatri_rao: inputs must be matrices"):
        run_op("khatri_rao", a, np.ones((2, 1), np.float32), num_args=2)


def test_depth_space_round_trip_and_gradients():
    """The docs example, the inverse pair, the block checks, and the gradients (each other)."""
    x = np.arange(24.0).reshape(1, 4, 2, 3)
    (y,) = run_op("depth_to_space", x, block_size=2)
    np.testing.assert_array_equal(y[0, 0, :2], [[0, 6, 1, 7, 2, 8], [12, 18, 13, 19, 14, 20]])
    np.testing.assert_array_equal(run_op("space_to_depth", y, block_size=2)[0], x)
    with pytest.raises(MXNetError, match="not a multiple of block_size"):
        run_op("depth_to_space", x, block_size=3)
    with pytest.raises(MXNetError, match="must be multiples of block_size"):
        run_op("space_to_depth", x, block_size=2)
    with pytest.raises(MXNetError, match="zero dimension"):
        run_op("depth_to_space", np.zeros((1, 4, 0, 3)), block_size=2)
    with pytest.raises(MXNetError, match="block_size must be positive"):
        run_op("space_to_depth", x, block_size=0)
    with pytest.raises(MXNetError, match="must be 4-D"):
        run_op("depth_to_space", x[0], block_size=2)
    check_numeric_grad("depth_to_space", x, block_size=2)
    check_numeric_grad("space_to_depth", y, block_size=2)


def test_split_v2_indices_sections_squeeze():
    """Repeated and trailing indices give empty pieces; sections; squeeze; the gradient concatenates."""
    s = np.arange(12.0).reshape(3, 2, 2)
    parts = run_op("_split_v2", s, indices=(0, 1, 1, 3))
    assert [p.shape for p in parts] == [(1, 2, 2), (0, 2, 2), (2, 2, 2), (0, 2, 2)]
    parts = run_op("_split_v2", s, indices=(), sections=2, axis=-1, squeeze_axis=True)
    np.testing.assert_array_equal(parts[1], s[..., 1])
    with pytest.raises(MXNetError, match="2 sections do not divide"):
        run_op("_split_v2", s, indices=(), sections=2)
    check_numeric_grad("_split_v2", s, indices=(0, 2), axis=0)


def test_symbol_forms():
    """mx.sym.split_v2 / linspace / histogram / cumsum infer shapes and run."""
    x = mx.sym.var("x")
    sp = mx.sym.split_v2(x, 3, axis=1)
    assert sp.infer_shape(x=(2, 6))[1] == [(2, 2)] * 3
    np.testing.assert_array_equal(mx.sym.linspace(0, 1, 5).eval()[0].asnumpy(), [0, 0.25, 0.5, 0.75, 1])
    h = mx.sym.histogram(x, bins=3, range=(0, 3))
    assert h.infer_shape(x=(4,))[1] == [(3,), (4,)]
    assert h.infer_type(x=np.float32)[1] == [np.int64, np.float32]
    with pytest.raises(ValueError, match="null range"):
        mx.sym.histogram(x, bins=3)
    c = mx.sym.cumsum(x, axis=0)
    assert c.infer_shape(x=(3, 4))[1] == [(3, 4)]
    d = mx.sym.diag(x)
    assert d.infer_shape(x=(5,))[1] == [(5, 5)]
