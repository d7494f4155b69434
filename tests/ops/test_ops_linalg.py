"""dot and batch_dot: N-d contraction rules, transposes, shape errors and gradients."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, run_op

from mxref.base import MXNetError

RNG = np.random.default_rng(5)

DOT_CASES = [((2, 3), (3, 4), False, False), ((2, 3, 4), (4, 5, 2), False, False),
             ((3, 2), (3, 5), True, False), ((4, 3, 2), (4, 5), True, False),
             ((2, 3, 4), (5, 2, 4), False, True), ((3,), (3,), False, False), ((4, 3), (5, 4), True, True)]


def _ref(a, b, ta, tb):
    am = a.reshape(a.shape[0], -1).T if ta else a.reshape(-1, a.shape[-1])
    bm = b.reshape(-1, b.shape[-1]).T if tb else b.reshape(b.shape[0], -1)
    shape = (a.shape[1:] if ta else a.shape[:-1]) + (b.shape[:-1] if tb else b.shape[1:])
    return (am @ bm).reshape(shape or (1,))


@pytest.mark.parametrize("ls,rs,ta,tb", DOT_CASES, ids=str)
def test_dot_shapes_values_and_gradient(ls, rs, ta, tb):
    """dot contracts lhs's last (or, transposed, first) axis with rhs's first (or last)."""
    a, b = RNG.standard_normal(ls), RNG.standard_normal(rs)
    (y,) = run_op("dot", a, b, transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(y, _ref(a, b, ta, tb), rtol=1e-12)
    check_numeric_grad("dot", a, b, transpose_a=ta, transpose_b=tb)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_dot_values_and_gradient(ta, tb, fdtype):
    """batch_dot multiplies matrix stacks; float32 stays float32."""
    a = RNG.standard_normal((2, 4, 3) if ta else (2, 3, 4)).astype(fdtype)
    b = RNG.standard_normal((2, 5, 4) if tb else (2, 4, 5)).astype(fdtype)
    (y,) = run_op("batch_dot", a, b, transpose_a=ta, transpose_b=tb)
    am = a.transpose(0, 2, 1) if ta else a
    bm = b.transpose(0, 2, 1) if tb else b
    assert y.dtype == fdtype
    np.testing.assert_allclose(y, am @ bm, rtol=1e-5)
    check_numeric_grad("batch_dot", a, b, transpose_a=ta, transpose_b=tb)


def test_matmul_shape_errors():
    """Mismatched inner dims or wrong ranks raise MXNetError with both shapes."""
    with pytest.raises(MXNetError, match=r"dot.*\(2, 3\).*\(4, 5\)"):
        run_op("dot", np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(MXNetError, match="batch_dot.*3-d"):
        run_op("batch_dot", np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(MXNetError, match="batch_dot"):
        run_op("batch_dot", np.ones((2, 3, 4)), np.ones((3, 4, 5)))
