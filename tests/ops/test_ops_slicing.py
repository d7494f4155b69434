"""slice / slice_axis / slice_like / _slice_assign(_scalar): Python slice rules, errors, gradients."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

from mxref.base import MXNetError
from mxref.ops import registry

X = np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize("begin,end,step", [
    ((1,), (2,), ()), ((None, 1), (None, -1), ()), ((-1, None, 3), (None, None, 0), (-1, 1, -2)),
    ((0, 0), (10, 10), (1, 2)), ((1,), (1,), ())], ids=str)
def test_slice_follows_python_rules(begin, end, step, fdtype):
    """None = default, negatives count back, bounds clamp, negative steps walk backwards."""
    x = X.astype(fdtype)
    (y,) = run_op("slice", x, begin=begin, end=end, step=step)
    key = tuple(slice(b, e, s) for b, e, s in zip(begin, end, step or (None,) * len(begin)))
    np.testing.assert_array_equal(y, x[key])
    assert y.dtype == fdtype


def test_slice_params_from_json_strings():
    """MXNet JSON writes begin='(None, 1)'; it parses to the same slice."""
    (y,) = run_op("slice", X, begin="(None, 1)", end="(None, 3)")
    np.testing.assert_array_equal(y, X[:, 1:3])


def test_slice_assign_and_scalar():
    """_slice_assign writes the value into the region; the rest of lhs is kept."""
    (y,) = run_op("_slice_assign", X, -np.ones((1, 2, 4)), begin=(1, 0), end=(2, 2))
    want = X.copy()
    want[1:2, 0:2] = -1
    np.testing.assert_array_equal(y, want)
    (z,) = run_op("_slice_assign_scalar", X, scalar=7, begin=(None, None, 1), end=(None, None, 3))
    want = X.copy()
    want[:, :, 1:3] = 7
    np.testing.assert_array_equal(z, want)
    x = X.copy()
    run_op("_slice_assign_scalar", x, scalar=0, begin=(0,), end=(1,), req="inplace", out=[x])
    assert not x[0].any() and x[1].all()


def test_slice_axis_and_slice_like():
    """slice_axis cuts one axis; slice_like cuts to another array's size on the given axes."""
    np.testing.assert_array_equal(run_op("slice_axis", X, axis=-1, begin=-3, end=None)[0], X[..., -3:])
    np.testing.assert_array_equal(run_op("slice_like", X, np.zeros((1, 2, 9)), axes=(0, 1))[0], X[:1, :2])
    np.testing.assert_array_equal(run_op("slice_like", X, np.zeros((1, 2, 3)))[0], X[:1, :2, :3])


@pytest.mark.parametrize("name,args,params", [
    ("slice", (), dict(begin=(1, None), end=(None, -1), step=(1, 2))),
    ("slice", (), dict(begin=(None, 2), end=(None, 0), step=(-1, -1))),
    ("slice_axis", (), dict(axis=1, begin=1, end=3)),
    ("_slice_assign", (np.ones((2, 2, 4)),), dict(begin=(None, 1), end=(None, 3))),
    ("_slice_assign_scalar", (), dict(scalar=3, begin=(None, 1), end=(None, 3)))], ids=str)
def test_slicing_gradients(name, args, params):
    """Gradients scatter into zeros (slice) or split between lhs and rhs (_slice_assign)."""
    check_numeric_grad(name, X / 10, *args, **params)


def test_slice_like_gradient_and_shape_input_zero():
    """slice_like's data gradient is the head gradient padded with zeros; shape_like gets zeros."""
    gd, gs = grad_op("slice_like", X, np.zeros((1, 2, 4)))
    assert gd.shape == X.shape and gd[:1, :2].all() and not gd[1:].any()
    assert not gs.any()


@pytest.mark.parametrize("name,params,match", [
    ("slice", dict(begin=(0,), end=(1, 2)), "same length"),
    ("slice", dict(begin=(0,), end=(1,), step=(0,)), "step"),
    ("slice", dict(begin=(0, 0, 0, 0), end=(1, 1, 1, 1)), "more axes"),
    ("slice_axis", dict(axis=3, begin=0, end=1), "slice_axis.*axis 3"),
    ("slice_axis", dict(axis=0, begin=2, end=None), "select nothing"),
    ("slice", dict(begin="(a,)", end=(1,)), "slice")])
def test_slicing_errors(name, params, match):
    """Malformed or impossible slices raise MXNetError naming the op."""
    with pytest.raises(MXNetError, match=match):
        run_op(name, X, **params)


def test_slice_assign_value_shape_must_match_region():
    """Assigning a value of the wrong shape names both shapes."""
    with pytest.raises(MXNetError, match=r"_slice_assign.*\(3,\)"):
        run_op("_slice_assign", X, np.ones(3), begin=(0,), end=(1,))
    assert registry.get("_crop_assign") is registry.get("_slice_assign")
    assert registry.get("crop") is registry.get("slice")
