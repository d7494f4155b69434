"""mx.nd.linspace / moveaxis / histogram / split_v2: MXNet 1.x's Python functions over one operator."""
import warnings

import numpy as np
import pytest

import mxref as mx


def test_linspace():
    """Endpoint in or out, dtype, and the default float32."""
    y = mx.nd.linspace(2.0, 3.0, 5)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), [2, 2.25, 2.5, 2.75, 3])
    np.testing.assert_allclose(mx.nd.linspace(2.0, 3.0, 5, endpoint=False).asnumpy(), [2, 2.2, 2.4, 2.6, 2.8],
                               rtol=1e-6)
    assert mx.nd.linspace(0, 10, 4, dtype="int32").asnumpy().tolist() == [0, 3, 6, 10]


def test_moveaxis_shapes_values_and_errors():
    x = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    np.testing.assert_array_equal(mx.nd.moveaxis(x, 0, -1).asnumpy(),
                                  np.moveaxis(np.arange(24).reshape(2, 3, 4), 0, -1))
    assert mx.nd.moveaxis(mx.nd.zeros((3, 4, 5)), [0, 1], [-1, -2]).shape == (5, 4, 3)
    with pytest.raises(ValueError, match="repeated axis"):
        mx.nd.moveaxis(x, (0, 0), (2, 1))
    with pytest.raises(ValueError, match="out of bounds"):
        mx.nd.moveaxis(x, 3, 0)
    with pytest.raises(ValueError, match="same number"):
        mx.nd.moveaxis(x, (0, 1), (2,))


def test_histogram_forms():
    """Int bins with range run the op; an NDArray of edges too; no range falls back to numpy."""
    h = mx.nd.array([[0, 1], [2, 2], [3, 4]])
    counts, edges = mx.nd.histogram(h, bins=5, range=(0, 5))
    assert counts.asnumpy().tolist() == [1, 1, 2, 1, 1] and counts.dtype == np.int64
    counts, _ = mx.nd.histogram(h, bins=mx.nd.array([0, 2.1, 3]))
    assert counts.asnumpy().tolist() == [4, 1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts, edges = mx.nd.histogram(h, bins=5)
    assert caught and counts.dtype == np.float32
    np.testing.assert_allclose(edges.asnumpy(), [0, 0.8, 1.6, 2.4, 3.2, 4])
    with pytest.raises(ValueError, match="bins argument"):
        mx.nd.histogram(h, bins="auto")


def test_split_v2_forms_and_autograd():
    """Sections, indices (empty pieces past the end), squeeze, and the gradient through pieces."""
    s = mx.nd.array(np.arange(12).reshape(3, 2, 2))
    assert [p.shape for p in mx.nd.split_v2(s, 3)] == [(1, 2, 2)] * 3
    assert [p.shape for p in mx.nd.split_v2(s, (1,))] == [(1, 2, 2), (2, 2, 2)]
    assert [p.shape for p in mx.nd.split_v2(s, (0, 2))] == [(0, 2, 2), (2, 2, 2), (1, 2, 2)]
    sq = mx.nd.split_v2(s, 2, axis=1, squeeze_axis=True)
    np.testing.assert_array_equal(sq[1].asnumpy(), np.arange(12).reshape(3, 2, 2)[:, 1])
    with pytest.raises(ValueError, match="equal division"):
        mx.nd.split_v2(s, 2)
    s.attach_grad()
    with mx.autograd.record():
        a, b = mx.nd.split_v2(s, (1,))
        loss = (a * 2).sum() + (b * 3).sum()
    loss.backward()
    np.testing.assert_array_equal(s.grad.asnumpy()[:, 0, 0], [2, 3, 3])


def test_fluent_methods():
    """x.split_v2 / x.depth_to_space / x.space_to_depth on NDArrays, and sym.split_v2."""
    x = mx.nd.array(np.arange(16).reshape(1, 4, 2, 2))
    assert x.depth_to_space(2).shape == (1, 1, 4, 4)
    assert x.depth_to_space(2).space_to_depth(2).shape == (1, 4, 2, 2)
    assert [p.shape for p in x.split_v2(2, axis=1)] == [(1, 2, 2, 2)] * 2
    s = mx.sym.var("x").split_v2((1,), axis=1)
    assert s.infer_shape(x=(1, 4, 2, 2))[1] == [(1, 1, 2, 2), (1, 3, 2, 2)]
