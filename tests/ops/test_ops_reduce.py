"""Reductions: axis/keepdims/exclude shapes, full reductions give (1,), dtypes, errors, gradients."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

from mxref.base import MXNetError

X = np.random.default_rng(3).uniform(0.5, 1.5, (2, 3, 4))
NP = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min, "nansum": np.nansum}
AXES = [dict(), dict(axis=1), dict(axis=(0, -1), keepdims=True), dict(axis=1, exclude=True),
        dict(axis=(0, 1, 2), exclude=True)]


@pytest.mark.parametrize("name", sorted(NP))
@pytest.mark.parametrize("params", AXES, ids=str)
def test_reduce_matches_numpy(name, params, fdtype):
    """Values and shapes follow numpy over the selected axes; a full reduction has shape (1,)."""
    x = X.astype(fdtype)
    (y,) = run_op(name, x, **params)
    axis = params.get("axis")
    axes = tuple(range(3)) if axis is None else tuple(a % 3 for a in np.atleast_1d(axis))
    if params.get("exclude"):
        axes = tuple(a for a in range(3) if a not in axes)
    want = NP[name](x, axis=axes, keepdims=params.get("keepdims", False)) if axes else x
    assert y.dtype == fdtype
    assert y.shape == (np.shape(want) or (1,))
    np.testing.assert_allclose(y, np.reshape(want, y.shape), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(NP) + ["nanprod"])
@pytest.mark.parametrize("params", AXES[:4], ids=str)
def test_reduce_gradient(name, params):
    """Gradients of every reduction match central differences."""
    check_numeric_grad(name, X, **params)


def test_max_gradient_goes_to_every_tie():
    """All positions equal to the maximum receive the head gradient (MXNet's eq mask)."""
    (g,) = grad_op("max", np.array([[1.0, 3.0, 3.0]]), axis=1)
    np.testing.assert_array_equal(g, [[0, 1, 1]])


@pytest.mark.parametrize("params", [dict(), dict(axis=1), dict(ord=1, axis=(1, 2)),
                                    dict(axis=-1, keepdims=True), dict(axis=(0, 1, 2))], ids=str)
def test_norm_values_and_gradient(params):
    """L2 (and L1) norm over axes, with its gradient x/|x| (sign(x))."""
    x = X - 1.0
    (y,) = run_op("norm", x, **params)
    order = params.get("ord", 2)
    want = np.linalg.norm(x.reshape(-1), order) if "axis" not in params else \
        (np.abs(x) ** order).sum(axis=params["axis"], keepdims=params.get("keepdims", False)) ** (1 / order)
    np.testing.assert_allclose(y.reshape(np.shape(want) or (1,)), np.reshape(want, y.shape), rtol=1e-6)
    check_numeric_grad("norm", x, **params)


def test_argmax_dtype_shape_and_zero_gradient(fdtype):
    """argmax returns indices in the input dtype; axis=None flattens; its gradient is zero."""
    x = X.astype(fdtype)
    (i,) = run_op("argmax", x, axis=1)
    assert i.dtype == fdtype
    np.testing.assert_array_equal(i, np.argmax(x, axis=1))
    assert run_op("argmin", x)[0].shape == (1,)
    assert run_op("argmax", x, axis=-1, keepdims=True)[0].shape == (2, 3, 1)
    np.testing.assert_array_equal(run_op("argmax_channel", x)[0], np.argmax(x, axis=-1))
    assert not grad_op("argmax", x, axis=0)[0].any()


def test_integer_mean_truncates():
    """mean of int32 stays int32, truncated like MXNet's integer division."""
    (m,) = run_op("mean", np.array([1, 2, 3, -4], np.int32))
    assert m.dtype == np.int32 and m.tolist() == [0]


@pytest.mark.parametrize("name,params,match", [
    ("sum", dict(axis=3), "sum.*axis 3"), ("mean", dict(axis=(1, 1)), "twice"),
    ("argmax", dict(axis=-4), "argmax.*-4"), ("norm", dict(ord=3), "ord"),
    ("sum", dict(keepdim=True), "sum.*'keepdim'")])
def test_reduce_errors_name_op_and_argument(name, params, match):
    """Bad axes, bad ord and unknown arguments raise MXNetError naming what is wrong."""
    with pytest.raises(MXNetError, match=match):
        run_op(name, X, **params)
