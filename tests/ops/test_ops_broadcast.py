"""Broadcasting binary ops and explicit broadcasts: shape rules, errors, gradients summed back."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, run_op

from mxref.base import MXNetError
from mxref.ops import registry

RNG = np.random.default_rng(2)
A = RNG.uniform(0.5, 1.5, (2, 3, 4))
R = RNG.uniform(0.5, 1.5, (3, 1))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "power", "maximum", "minimum", "mod", "hypot"])
def test_broadcast_gradient_sums_over_broadcast_axes(op):
    """Each input's gradient has its own shape and matches central differences."""
    check_numeric_grad(f"broadcast_{op}", A, R)


def test_broadcast_values_and_dtype(fdtype):
    """broadcast_add equals numpy broadcasting, keeping the dtype; comparisons give 0/1."""
    a, r = A.astype(fdtype), R.astype(fdtype)
    (y,) = run_op("broadcast_add", a, r)
    assert y.dtype == fdtype
    np.testing.assert_allclose(y, a + r, rtol=1e-6)
    np.testing.assert_array_equal(run_op("broadcast_greater", a, r)[0], (a > r).astype(fdtype))


def test_broadcast_shape_inference_partial_and_errors():
    """Unknown dims (0) resolve from the other side; incompatible shapes name the op and shapes."""
    infer = registry.get("broadcast_mul").infer_shape
    assert infer({}, [(2, 0, 4), (3, 1)])[1] == [(2, 3, 4)]
    assert infer({}, [None, (3, 1)])[1] == [None]
    with pytest.raises(MXNetError, match=r"broadcast_mul.*\(2, 3\).*\(4,\)"):
        infer({}, [(2, 3), (4,)])


def test_broadcast_to_axis_like():
    """broadcast_to keeps dims given as 0; broadcast_axis and broadcast_like stretch size-1 axes."""
    x = np.arange(3.0).reshape(1, 3, 1)
    assert run_op("broadcast_to", x, shape=(2, 0, 5))[0].shape == (2, 3, 5)
    assert run_op("broadcast_axis", x, axis=(0, 2), size=(2, 4))[0].shape == (2, 3, 4)
    assert run_op("broadcast_axes", x, axis=0, size=2)[0].shape == (2, 3, 1)
    assert run_op("broadcast_like", x, np.zeros((2, 3, 4)))[0].shape == (2, 3, 4)
    y = run_op("broadcast_like", x, np.zeros((5, 6)), lhs_axes=(0,), rhs_axes=(1,))[0]
    assert y.shape == (6, 3, 1)
    with pytest.raises(MXNetError, match="broadcast_to"):
        run_op("broadcast_to", x, shape=(2, 4, 5))
    with pytest.raises(MXNetError, match="broadcast_axis"):
        run_op("broadcast_axis", x, axis=1, size=4)


@pytest.mark.parametrize("name,params,args", [
    ("broadcast_to", {"shape": (2, 3, 4)}, ()), ("broadcast_axis", {"axis": (0, 2), "size": (2, 4)}, ()),
    ("broadcast_like", {}, (np.zeros((2, 3, 4)),))])
def test_explicit_broadcast_gradient(name, params, args):
    """The data gradient is the head gradient summed back to the data's shape."""
    check_numeric_grad(name, np.arange(3.0).reshape(1, 3, 1), *args, wrt=[0], **params)


def test_plus_and_minus_aliases():
    """broadcast_plus / broadcast_minus are broadcast_add / broadcast_sub."""
    assert registry.get("broadcast_plus") is registry.get("broadcast_add")
    assert registry.get("broadcast_minus") is registry.get("broadcast_sub")


def test_broadcast_like_empty_axes_rejected():
    """broadcast_like with lhs_axes=() / rhs_axes=() is an error naming the argument (as MXNet)."""
    import mxref as mx
    from mxref.base import MXNetError
    with pytest.raises(MXNetError, match="empty lhs_axes"):
        mx.nd.broadcast_like(mx.nd.ones((1, 2)), mx.nd.ones((3, 2)), lhs_axes=(), rhs_axes=())
