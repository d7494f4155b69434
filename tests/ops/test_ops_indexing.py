"""take / pick / one_hot / where / clip: index modes, out-of-range rules, shapes and gradients."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

from mxref.base import MXNetError

M = np.arange(12.0).reshape(3, 4)


def test_take_modes(fdtype):
    """clip clamps, wrap wraps, raise errors; the output is a.shape[:axis] + idx.shape + rest."""
    m = M.astype(fdtype)
    idx = np.array([[0, 5], [-1, 1]], fdtype)
    (y,) = run_op("take", m, idx)
    assert y.shape == (2, 2, 4) and y.dtype == fdtype
    np.testing.assert_array_equal(y[0, 1], m[2])
    np.testing.assert_array_equal(run_op("take", m, np.array([0, 5, -1.0]), axis=1, mode="wrap")[0],
                                  m[:, [0, 1, 3]])
    with pytest.raises(MXNetError, match="take.*raise"):
        run_op("take", m, idx, mode="raise")


def test_take_gradient_accumulates_repeated_rows():
    """Rows taken twice receive the head gradient twice; indices get zeros."""
    ga, gi = grad_op("take", M, np.array([0.0, 0.0, 2.0]))
    np.testing.assert_array_equal(ga[:, 0], [2, 0, 1])
    assert not gi.any()
    check_numeric_grad("take", M, np.array([[1.0, 2.0], [2.0, 0.0]]), axis=1, wrt=[0])


def test_pick_clip_wrap_keepdims():
    """pick takes one element per row; clip clamps (5 -> 3, -1 -> 0), wrap wraps."""
    idx = np.array([0.0, 5.0, -1.0])
    np.testing.assert_array_equal(run_op("pick", M, idx, axis=1)[0], [0, 7, 8])
    (k,) = run_op("pick", M, idx, axis=-1, keepdims=True, mode="wrap")
    np.testing.assert_array_equal(k, [[0], [5], [11]])
    check_numeric_grad("pick", M, np.array([1.0, 3.0, 0.0]), axis=1, wrt=[0])
    check_numeric_grad("pick", M, np.array([[2.0, 0.0, 1.0, 2.0]]), axis=0, keepdims=True, wrt=[0])
    with pytest.raises(MXNetError, match="pick.*index shape"):
        run_op("pick", M, np.zeros(4), axis=1)


def test_one_hot_values_dtype_and_out_of_range_rows():
    """Out-of-range indices give an all-off row; dtype and on/off values follow the params."""
    (y,) = run_op("one_hot", np.array([0.0, 2.0, 5.0, -1.0]), depth=3, on_value=5, off_value=-1,
                  dtype="int32")
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [[5, -1, -1], [-1, -1, 5], [-1, -1, -1], [-1, -1, -1]])


def test_where_same_shape_and_row_condition():
    """A same-shape condition picks elementwise; a 1-d one picks whole rows."""
    y = -M
    cond = (M % 2 == 0).astype(M.dtype)
    np.testing.assert_array_equal(run_op("where", cond, M, y)[0], np.where(cond, M, y))
    np.testing.assert_array_equal(run_op("where", np.array([1.0, 0, 1]), M, y)[0][1], y[1])
    check_numeric_grad("where", cond, M, y, wrt=[1, 2])
    check_numeric_grad("where", np.array([0.0, 1, 1]), M, y, wrt=[1, 2])
    with pytest.raises(MXNetError, match="where"):
        run_op("where", np.ones(4), M, y)


def test_clip_values_and_gradient_inside_bounds_only(fdtype):
    """clip limits values; the gradient passes only where a_min <= x <= a_max."""
    x = (M / 4).astype(fdtype)
    (y,) = run_op("clip", x, a_min=0.5, a_max=2.0)
    np.testing.assert_array_equal(y, np.clip(x, 0.5, 2.0))
    assert y.dtype == fdtype
    (g,) = grad_op("clip", x, a_min=0.6, a_max=2.1)
    np.testing.assert_array_equal(g, ((x >= 0.6) & (x <= 2.1)).astype(fdtype))


@pytest.mark.parametrize("req", ["write", "inplace", "add"])
def test_clip_kernel_in_place_and_by_request(req):
    """The executor's memory planner may hand clip its input as the output ('inplace', ReLU6 in
    MobileNet): the result is np.clip's, written over the input; 'add' adds it in."""
    from mxref.ops import registry

    rng = np.random.default_rng(3)
    x = rng.standard_normal(1000).astype(np.float32) * 8
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    want = np.clip(x, 0.0, 6.0)
    op = registry.get("clip")
    params = op.parse_params({"a_min": 0.0, "a_max": 6.0})
    if req == "inplace":
        out = x.copy()
        op.fcompute(None, params, [out], [out], [req])
    else:
        out = np.ones_like(x)
        op.fcompute(None, params, [x], [out], [req])
        want = want + 1 if req == "add" else want
    assert out.tobytes() == want.tobytes()


def test_where_shape_merges_unknown_dimensions():
    """A 0 (unknown) dimension of x or y is filled in from the other (a symbolic zero begin state)."""
    import mxref as mx
    c, x, y = mx.sym.var("c"), mx.sym.var("x"), mx.sym.zeros(shape=(0, 4))
    _, outs, _ = mx.sym.where(c, x, y).infer_shape(c=(3, 4), x=(3, 4))
    assert outs == [(3, 4)]
    with pytest.raises(mx.base.MXNetError, match="where"):
        mx.sym.where(c, x, mx.sym.zeros(shape=(0, 5))).infer_shape(c=(3, 4), x=(3, 4))
