"""linalg.trmm / trsm / syrk: only A's triangle is read, every (lower, rightside, transpose), gradients
by central differences, shapes and errors."""
import itertools

import numpy as np
import pytest

import mxref as mx
from mxref import op_check
from mxref.base import MXNetError

RNG = np.random.default_rng(12)
COMBOS = list(itertools.product([True, False], [False, True], [False, True]))


def _tri_input(lower, n=3, batch=(2,)):
    """A well-conditioned triangle plus noise in the other triangle (which must be ignored)."""
    t = RNG.standard_normal(batch + (n, n)) + 3 * np.eye(n)
    noise = RNG.standard_normal(batch + (n, n))
    return (np.tril(t) + np.triu(noise, 1)) if lower else (np.triu(t) + np.tril(noise, -1))


def _ref_op_a(a, lower, transpose):
    t = np.tril(a) if lower else np.triu(a)
    return np.swapaxes(t, -1, -2) if transpose else t


@pytest.mark.parametrize("lower,rightside,transpose", COMBOS)
def test_trmm_and_trsm_values_and_gradients(lower, rightside, transpose):
    """trmm = alpha op(A) B (B op(A) on the right); trsm its inverse; both gradients match differences."""
    a = _tri_input(lower)
    b = RNG.standard_normal((2, 4, 3) if rightside else (2, 3, 4))
    p = {"lower": lower, "rightside": rightside, "transpose": transpose, "alpha": -1.5}
    m = _ref_op_a(a, lower, transpose)
    (c,) = op_check.run_op("_linalg_trmm", [a, b], p)
    np.testing.assert_allclose(c, -1.5 * (b @ m if rightside else m @ b), rtol=1e-12, atol=1e-12)
    (x,) = op_check.run_op("_linalg_trsm", [a, c], p)
    np.testing.assert_allclose(x, 2.25 * b, rtol=1e-10, atol=1e-12)     # (1.5 op(A))^-1 (1.5 op(A)) B
    for name in ("_linalg_trmm", "_linalg_trsm"):
        op_check.check_op_gradient(name, [a, b], p, is_train=False, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("transpose", [False, True])
def test_syrk_values_and_gradient(transpose):
    """syrk = alpha A A^T (or A^T A) over a batch; its gradient is alpha (G + G^T) A (or A (G + G^T))."""
    a = RNG.standard_normal((2, 3, 4))
    (y,) = op_check.run_op("_linalg_syrk", [a], {"transpose": transpose, "alpha": 0.5})
    at = np.swapaxes(a, 1, 2)
    np.testing.assert_allclose(y, 0.5 * (at @ a if transpose else a @ at), rtol=1e-12)
    op_check.check_op_gradient("_linalg_syrk", [a], {"transpose": transpose, "alpha": 0.5}, is_train=False)


def test_symbolic_shapes_forward_and_backward():
    """trmm's and syrk's shapes infer from their inputs; trsm's backward infers from its output too."""
    s = mx.sym.linalg.trsm(mx.sym.var("a"), mx.sym.var("b"), rightside=True)
    _, out, _ = s.infer_shape(a=(2, 4, 4), b=(2, 3, 4))
    assert out == [(2, 3, 4)]
    _, out, _ = mx.sym.linalg.syrk(mx.sym.var("a"), transpose=True).infer_shape(a=(7, 2, 5))
    assert out == [(7, 5, 5)]
    assert mx.sym.linalg.trmm(name="t").list_arguments() == ["t_A", "t_B"]


def test_errors():
    """Non-square A, mismatched inner dimension or batch, and a singular triangle (trsm)."""
    with pytest.raises(MXNetError, match=r"linalg.trmm.*'A'.*square.*\(3, 4\)"):
        op_check.run_op("_linalg_trmm", [np.ones((3, 4)), np.ones((3, 4))])
    with pytest.raises(MXNetError, match=r"linalg.trsm.*incompatible.*\(3, 3\).*\(4, 2\)"):
        op_check.run_op("_linalg_trsm", [np.eye(3), np.ones((4, 2))])
    with pytest.raises(MXNetError, match=r"linalg.trmm.*\(2, 3, 3\).*\(3, 3, 3\)"):
        op_check.run_op("_linalg_trmm", [np.ones((2, 3, 3)), np.ones((3, 3, 3))])
    with pytest.raises(MXNetError, match="linalg.trsm.*singular"):
        op_check.run_op("_linalg_trsm", [np.zeros((2, 2)), np.ones((2, 2))])
    with pytest.raises(MXNetError, match=r"linalg.syrk.*'A'.*\(4,\)"):
        op_check.run_op("_linalg_syrk", [np.ones(4)])


def test_imperative_with_autograd():
    """mx.nd.linalg.trmm records; its gradient for B is alpha op(A)^T G."""
    a, b = _tri_input(True, 3, ()), RNG.standard_normal((3, 2))
    x, y = mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64")
    y.attach_grad()
    with mx.autograd.record():
        z = mx.nd.linalg.trmm(x, y, alpha=2.0)
    z.backward()
    np.testing.assert_allclose(y.grad.asnumpy(), 2.0 * np.tril(a).T @ np.ones((3, 2)), rtol=1e-12)
