"""contrib boolean_mask / index_copy / index_array / arange_like / allclose: MXNet 1.9.1's values,
the NDArray front end of boolean_mask (data-dependent shape), gradients and errors."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

import mxref as mx
from mxref.base import MXNetError

D = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32)


def test_boolean_mask_ndarray_front_end_and_gradient():
    """Rows with a non-zero mask (any dtype); no rows at all; the gradient goes to those rows."""
    data = mx.nd.array(D)
    np.testing.assert_array_equal(mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1, 0])).asnumpy(),
                                  [[4, 5, 6]])
    got = mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 2, -1], dtype="int32"))
    np.testing.assert_array_equal(got.asnumpy(), D[1:])
    assert mx.nd.contrib.boolean_mask(data, mx.nd.zeros(3)).shape == (0, 3)
    data.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1, 1]))
    out.backward()
    np.testing.assert_array_equal(data.grad.asnumpy(), [[0, 0, 0], [1, 1, 1], [1, 1, 1]])
    with pytest.raises(MXNetError, match="boolean_mask: index of shape"):
        mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1]))
    with pytest.raises(MXNetError, match="axis=1 is not supported"):
        mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1, 1]), axis=1)


def test_boolean_mask_symbol_shape_is_unknown_until_run():
    """A symbol cannot know the row count; the op itself, given it, has a gradient."""
    s = mx.sym.contrib.boolean_mask(mx.sym.var("a"), mx.sym.var("i"))
    arg, out, _ = s.infer_shape_partial(a=(3, 3), i=(3,))
    assert arg == [(3, 3), (3,)] and out[0] in (None, ())
    check_numeric_grad("_contrib_boolean_mask", D.astype(np.float64), np.array([1.0, 0, 1]), size=2, wrt=[0])


def test_index_copy_values_out_of_range_and_gradient():
    """Rows copied by index; an out-of-range index drops its row (as MXNet); gradients."""
    new = D.copy()
    (y,) = run_op("_contrib_index_copy", np.zeros((5, 3), np.float32), np.array([0, 4, 2.0]), new)
    np.testing.assert_array_equal(y, [[1, 2, 3], [0, 0, 0], [7, 8, 9], [0, 0, 0], [4, 5, 6]])
    (y,) = run_op("_contrib_index_copy", np.zeros((5, 3), np.float32), np.array([0, 7, 2], np.int64), new)
    assert not y[4].any()
    go, gi, gn = grad_op("_contrib_index_copy", np.zeros((5, 3)), np.array([0, 4, 2.0]),
                         new.astype(np.float64))
    np.testing.assert_array_equal(go[:, 0], [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(gn, np.ones((3, 3)))
    assert not gi.any()
    with pytest.raises(MXNetError, match="index_copy: new_tensor of shape"):
        run_op("_contrib_index_copy", np.zeros((5, 2)), np.array([0, 4, 2.0]), new)
    np.testing.assert_array_equal(mx.nd.contrib.index_copy(mx.nd.zeros(5), mx.nd.array([0, 4]),
                                                           mx.nd.array([1, 2])).asnumpy(), [1, 0, 0, 0, 2])


def test_index_array():
    """int64 coordinates, with axes picked (negative allowed); a bad axis is an error."""
    (y,) = run_op("_contrib_index_array", np.ones((3, 2)))
    assert y.dtype == np.int64 and y.shape == (3, 2, 2)
    np.testing.assert_array_equal(y[2, 1], [2, 1])
    (y,) = run_op("_contrib_index_array", np.ones((3, 2, 2)), axes=(1, 0))
    np.testing.assert_array_equal(y[2, 1, 0], [1, 2])
    np.testing.assert_array_equal(run_op("_contrib_index_array", np.ones((3, 2)), axes=(-1,))[0][:, :, 0],
                                  [[0, 1]] * 3)
    with pytest.raises(MXNetError, match="index_array: axis 2"):
        run_op("_contrib_index_array", np.ones((3, 2)), axes=(2,))


def test_arange_like():
    """MXNet 1.9.1's values: repeat and step, an axis, and an int input truncating 0.5 + n."""
    np.testing.assert_array_equal(run_op("_contrib_arange_like", D, start=1, step=2, repeat=2)[0],
                                  [[1, 1, 3], [3, 5, 5], [7, 7, 9]])
    np.testing.assert_array_equal(run_op("_contrib_arange_like", D, axis=-1)[0], [0, 1, 2])
    (y,) = run_op("_contrib_arange_like", D.astype(np.int32), start=0.5)
    assert y.dtype == np.int32 and y[2, 2] == 8


def test_allclose():
    """The docs examples, equal_nan both ways, a 0-d uint8 result, and a shape mismatch."""
    def close(a, b, **kw):
        (r,) = run_op("_contrib_allclose", np.array(a, np.float32), np.array(b, np.float32), **kw)
        assert r.dtype == np.uint8 and r.shape == ()
        return int(r)
    assert close([1e10, 1e-7], [1.00001e10, 1e-8]) == 0
    # NOTE: MXNet's docs say 1 here, but in float32 1.00001e10 - 1e10 = 100352 > 1e-5 * b: 0 (as
    # MXNet 1.9.1 computes too).
    assert close([1e10, 1e-8], [1.00001e10, 1e-9]) == 0
    assert close([1e10, 1e-8], [1.000009e10, 1e-9]) == 1
    assert close([np.nan, 1], [np.nan, 1]) == 1
    assert close([np.nan, 1], [np.nan, 1], equal_nan=False) == 0
    with pytest.raises(MXNetError, match="allclose: a of shape"):
        run_op("_contrib_allclose", np.ones(2), np.ones(3))


def test_boolean_mask_in_a_hybridized_block_runs_op_by_op():
    """A graph holding boolean_mask (data-dependent shape) runs op by op when hybridized, with
    gradients, as MXNet's dynamic-shape CachedOp does."""
    class Masked(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, data, index):
            return F.contrib.boolean_mask(data, index) * 2

    block = Masked()
    block.hybridize()
    data = mx.nd.array(D)
    data.attach_grad()
    with mx.autograd.record():
        out = block(data, mx.nd.array([0, 1, 1]))
    out.backward()
    np.testing.assert_array_equal(out.asnumpy(), D[1:] * 2)
    np.testing.assert_array_equal(data.grad.asnumpy(), [[0, 0, 0], [2, 2, 2], [2, 2, 2]])
    assert block(data, mx.nd.array([1, 0, 0])).shape == (1, 3)
