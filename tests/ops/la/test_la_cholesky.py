"""linalg.potrf / potri / sumlogdiag: factors with zeros in the other triangle, the inverse from the
factor, gradients (potrf's through a symmetrized input, as its gradient is a symmetric one), errors."""
import contextlib

import numpy as np
import pytest

import mxref as mx
from mxref import op_check
from mxref._ext import reference_kernels
from mxref.base import MXNetError
from mxref.test_utils import check_numeric_gradient

RNG = np.random.default_rng(13)


def _spd(*shape):
    x = RNG.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("lower", [True, False])
def test_potrf_factor_reads_one_triangle(lower):
    """potrf gives L (A = L L^T) or U (A = U^T U), zeros elsewhere, reading only that triangle of A."""
    a = _spd(2, 3, 4, 4)
    noisy = a + (np.triu if lower else np.tril)(RNG.standard_normal((4, 4)), 1 if lower else -1)
    (f,) = op_check.run_op("_linalg_potrf", [noisy], {"lower": lower})
    ft = np.swapaxes(f, -1, -2)
    np.testing.assert_allclose(f @ ft if lower else ft @ f, a, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(f, np.tril(f) if lower else np.triu(f))
    chol = np.linalg.cholesky(a)
    np.testing.assert_allclose(f, chol if lower else np.swapaxes(chol, -1, -2))


@pytest.mark.parametrize("lower", [True, False])
def test_potrf_gradient_through_symmetric_input(lower):
    """d potrf(sym(X)) / dX by central differences, batched (MXNet's test uses the same symmetrization)."""
    x = mx.sym.var("x")
    s = mx.sym.linalg.potrf(0.5 * (x + mx.sym.transpose(x, axes=(0, 2, 1))), lower=lower)
    check_numeric_gradient(s, [_spd(2, 3, 3)], numeric_eps=1e-6, rtol=1e-5, atol=1e-7, dtype=np.float64)


@pytest.mark.parametrize("lower", [True, False])
def test_potri_inverse_and_gradient(lower):
    """potri(L) = (L L^T)^-1 (or (U^T U)^-1) from the triangle only; its gradient is tril (triu)."""
    a = _spd(2, 4, 4)
    f = np.linalg.cholesky(a)
    f = f if lower else np.swapaxes(f, -1, -2)
    noisy = f + (np.triu if lower else np.tril)(RNG.standard_normal((4, 4)), 1 if lower else -1)
    (inv,) = op_check.run_op("_linalg_potri", [noisy], {"lower": lower})
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    op_check.check_op_gradient("_linalg_potri", [noisy], {"lower": lower}, is_train=False)


def test_sumlogdiag_values_shapes_and_gradient():
    """sum(log(diag)) per matrix: shape (batch...) or (1,) for one matrix; gradient diag(G / A_ii)."""
    a = RNG.uniform(0.5, 2.0, (2, 3, 3, 3))
    (y,) = op_check.run_op("_linalg_sumlogdiag", [a])
    np.testing.assert_allclose(y, np.log(np.diagonal(a, axis1=-2, axis2=-1)).sum(-1), rtol=1e-12)
    assert op_check.run_op("_linalg_sumlogdiag", [a[0, 0]])[0].shape == (1,)
    op_check.check_op_gradient("_linalg_sumlogdiag", [a[0]], is_train=False)


@pytest.mark.parametrize("kernels", ["reference", "table"])
@pytest.mark.parametrize("lower", [True, False])
def test_potrf_large_float32(lower, kernels):
    """512 x 512 float32: the reference's blocked factorization (numpy's factor by panels) and
    whatever the kernel table picks (SciPy's spotrf when installed); one triangle read."""
    block = reference_kernels() if kernels == "reference" else contextlib.nullcontext()
    with block:
        a = _spd(512, 512).astype(np.float32)
        noisy = a + (np.triu if lower else np.tril)(np.ones((512, 512), np.float32), 1 if lower else -1)
        (f,) = op_check.run_op("_linalg_potrf", [noisy], {"lower": lower})
        chol = np.linalg.cholesky(a.astype(np.float64))
        np.testing.assert_allclose(f, chol if lower else chol.T, rtol=1e-4, atol=1e-4)
        (added,) = op_check.run_op("_linalg_potrf", [noisy], {"lower": lower}, req="add",
                                   out=[np.ones((512, 512), np.float32)])
        np.testing.assert_allclose(added, f + 1, rtol=1e-6)
        bad = a.copy()
        bad[400, 400] = -1.0          # fails in a later panel
        with pytest.raises(MXNetError, match="positive definite"):
            op_check.run_op("_linalg_potrf", [bad])


def test_errors():
    """Non-square input and a matrix that is not positive definite (raised when the kernel runs)."""
    with pytest.raises(MXNetError, match=r"linalg.potrf.*'A'.*square.*\(2, 3\)"):
        op_check.run_op("_linalg_potrf", [np.ones((2, 3))])
    with pytest.raises(MXNetError, match="linalg.potrf.*positive definite"):
        op_check.run_op("_linalg_potrf", [np.array([[1.0, 2.0], [2.0, 1.0]])])
    with pytest.raises(MXNetError, match=r"linalg.sumlogdiag.*square"):
        op_check.run_op("_linalg_sumlogdiag", [np.ones((2, 3))])
    with pytest.raises(MXNetError, match="positive definite"):
        mx.nd.linalg.potrf(mx.nd.array([[1.0, 2.0], [2.0, 1.0]])).asnumpy()


def test_imperative_chain_and_symbolic_shape():
    """potri(potrf(A)) = A^-1 imperatively (float32); shapes pass through in mx.sym."""
    a = _spd(3, 3).astype(np.float32)
    inv = mx.nd.linalg.potri(mx.nd.linalg.potrf(mx.nd.array(a)))
    assert inv.dtype == np.float32
    np.testing.assert_allclose(inv.asnumpy(), np.linalg.inv(a), rtol=1e-4, atol=1e-5)
    _, out, _ = mx.sym.linalg.sumlogdiag(mx.sym.linalg.potrf(mx.sym.var("a"))).infer_shape(a=(6, 5, 5))
    assert out == [(6,)]
