"""linalg.gelqf (A = L Q) and linalg.syevd (A = U^T diag(L) U): the factorizations, MXNet's sign
conventions, both outputs' gradients by central differences, shapes and errors."""
import numpy as np
import pytest

import mxref as mx
from mxref import op_check
from mxref.base import MXNetError
from mxref.test_utils import check_numeric_gradient

RNG = np.random.default_rng(14)


@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 4), (1, 2, 1, 6)])
def test_gelqf_factorization(shape):
    """Q has orthonormal rows, L is lower triangular, L Q = A; the signs are those of geqrf(A^T)."""
    a = RNG.standard_normal(shape)
    q, lo = op_check.run_op("_linalg_gelqf", [a])
    assert q.shape == a.shape and lo.shape == a.shape[:-1] + (a.shape[-2],)
    np.testing.assert_allclose(lo @ q, a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(shape[-2]), lo.shape),
                               atol=1e-12)
    np.testing.assert_array_equal(lo, np.tril(lo))
    _, r = np.linalg.qr(np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(lo, np.swapaxes(r, -1, -2), rtol=1e-12, atol=1e-12)


def test_gelqf_gradient_of_both_outputs():
    """The (dQ, dL, Q, L) backward node against central differences, heads on Q and L, batched."""
    op_check.check_op_gradient("_linalg_gelqf", [RNG.standard_normal((2, 3, 4))], is_train=False)


def test_syevd_decomposition_and_signs():
    """U^T diag(L) U = A, L ascending, each row of U with its largest-magnitude entry positive."""
    x = RNG.standard_normal((2, 5, 5))
    a = x + np.swapaxes(x, 1, 2)
    u, lam = op_check.run_op("_linalg_syevd", [a + np.triu(RNG.standard_normal((5, 5)), 1)])  # lower read
    np.testing.assert_allclose(np.swapaxes(u, 1, 2) @ (lam[..., None] * u), a, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    assert (np.diff(lam, axis=-1) > 0).all()
    big = np.take_along_axis(u, np.abs(u).argmax(-1)[..., None], -1)
    assert (big > 0).all()


def test_syevd_example_from_mxnet():
    """MXNet's documented case, float32 and float64: [[1, 2], [2, 4]] has eigenvalues 0 and 5."""
    for dt in ("float32", "float64"):
        u, lam = mx.nd.linalg.syevd(mx.nd.array([[1.0, 2.0], [2.0, 4.0]], dtype=dt))
        assert u.dtype == lam.dtype == np.dtype(dt)
        np.testing.assert_allclose(u.asnumpy(), [[0.89442718, -0.44721359], [0.44721359, 0.89442718]],
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(lam.asnumpy(), [0.0, 5.0], atol=1e-6)


@pytest.mark.parametrize("which", [0, 1])
def test_syevd_gradient_through_symmetric_input(which):
    """Gradients of U and of L (through a symmetrized input: syevd's gradient is a symmetric one)."""
    x = mx.sym.var("x")
    outs = mx.sym.linalg.syevd(0.5 * (x + mx.sym.transpose(x, axes=(0, 2, 1))))
    a = RNG.standard_normal((2, 4, 4))
    check_numeric_gradient(outs[which], [a], numeric_eps=1e-6, rtol=1e-4, atol=1e-6, dtype=np.float64)


def test_shapes_and_errors():
    """gelqf needs rows <= columns, syevd square matrices; symbolic shapes of both outputs."""
    with pytest.raises(MXNetError, match=r"linalg.gelqf.*\(5, 3\)"):
        op_check.run_op("_linalg_gelqf", [np.ones((5, 3))])
    with pytest.raises(MXNetError, match=r"linalg.syevd.*square.*\(2, 3\)"):
        op_check.run_op("_linalg_syevd", [np.ones((2, 3))])
    q, lo = mx.sym.linalg.gelqf(mx.sym.var("a"))
    assert mx.sym.Group([q, lo]).infer_shape(a=(7, 2, 3))[1] == [(7, 2, 3), (7, 2, 2)]
    s = mx.sym.linalg.syevd(mx.sym.var("a"), name="e")
    assert s.list_outputs() == ["e_output0", "e_output1"]      # MXNet's default names
    assert s.infer_shape(a=(3, 4, 4))[1] == [(3, 4, 4), (3, 4)]


def test_gelqf_autograd_float32_matches_float64():
    """MXNet's test_infer_multiout_op2: the gradient of sum(L) in float32 agrees with float64."""
    a = RNG.standard_normal((2, 3))
    grads = []
    for dt in ("float32", "float64"):
        x = mx.nd.array(a, dtype=dt)
        x.attach_grad()
        with mx.autograd.record():
            _, lo = mx.nd.linalg.gelqf(x)
            s = mx.nd.sum(lo)
        s.backward()
        assert x.grad.dtype == np.dtype(dt)
        grads.append(x.grad.asnumpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)
