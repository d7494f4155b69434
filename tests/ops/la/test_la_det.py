"""linalg.inverse / det / slogdet: values against numpy, the hidden LU outputs, singular matrices,
gradients by central differences and through mx.nd autograd, shapes and errors."""
import numpy as np
import pytest

import mxref as mx
from mxref import op_check
from mxref.base import MXNetError
from mxref.ops.la.det import getrf

RNG = np.random.default_rng(15)


def test_inverse_values_and_gradient():
    """inverse over a batch (float32 kept) and its gradient -A^-T G A^-T."""
    a = RNG.standard_normal((2, 3, 4, 4)) + 4 * np.eye(4)
    (y,) = op_check.run_op("_linalg_inverse", [a])
    np.testing.assert_allclose(y, np.linalg.inv(a), rtol=1e-12)
    (y32,) = op_check.run_op("_linalg_inverse", [a.astype(np.float32)])
    assert y32.dtype == np.float32
    op_check.check_op_gradient("_linalg_inverse", [a[0]], is_train=False)


def test_det_and_slogdet_values_and_hidden_factors():
    """det and (sign, log|det|) per matrix; the hidden outputs are getrf's LU and 1-based pivots."""
    a = RNG.standard_normal((3, 2, 5, 5))
    det, lu, piv = op_check.run_op("_linalg_det", [a])
    np.testing.assert_allclose(det, np.linalg.det(a), rtol=1e-10)
    assert lu.shape == a.shape and piv.shape == a.shape[:-1] and piv.dtype == np.int32
    assert piv.min() >= 1 and piv.max() <= 5
    sign, logabs, _, _ = op_check.run_op("_linalg_slogdet", [a])
    want_sign, want_log = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, want_sign)
    np.testing.assert_allclose(logabs, want_log, rtol=1e-10)
    assert op_check.run_op("_linalg_det", [a[0, 0]])[0].shape == (1,)


def test_getrf_factors_the_transpose():
    """getrf's factors, read as LAPACK leaves them: A^T = P L U with the recorded row swaps."""
    a = RNG.standard_normal((2, 4, 4))
    lu, piv = getrf(a)
    for k in range(2):
        m = lu[k].T
        prod = (np.tril(m, -1) + np.eye(4)) @ np.triu(m)
        for j in reversed(range(4)):            # undo the swaps, last first
            p = piv[k, j] - 1
            prod[[j, p]] = prod[[p, j]]
        np.testing.assert_allclose(prod, a[k].T, rtol=1e-12, atol=1e-12)


def test_singular_matrices():
    """A singular matrix: det 0, sign 0, log|det| -inf, and a zero gradient (MXNet's documented case)."""
    a = np.array([[[2.0, 3.0], [1.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [4.0, 3.0]]])
    sign, logabs = mx.nd.linalg.slogdet(mx.nd.array(a))
    np.testing.assert_allclose(sign.asnumpy(), [1.0, 0.0, -1.0])
    np.testing.assert_allclose(logabs.asnumpy(), [1.609438, -np.inf, 1.609438], rtol=1e-6)
    x = mx.nd.array(a, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        d = mx.nd.linalg.det(x)
    d.backward()
    np.testing.assert_array_equal(x.grad.asnumpy()[1], 0)
    np.testing.assert_allclose(x.grad.asnumpy()[0], np.linalg.det(a[0]) * np.linalg.inv(a[0]).T)


@pytest.mark.parametrize("name", ["_linalg_det", "_linalg_slogdet"])
def test_det_gradients(name):
    """Jacobi's formula against central differences, batched (the sign output gets no gradient)."""
    op_check.check_op_gradient(name, [RNG.standard_normal((2, 3, 3))], is_train=False)


def test_autograd_det_of_a_product():
    """mx.nd autograd through det(gemm2(A, B)): d/dA = det(AB) (AB)^-T B^T."""
    a, b = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))
    x, y = mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        d = mx.nd.linalg.det(mx.nd.linalg.gemm2(x, y))
    d.backward()
    ab = a @ b
    np.testing.assert_allclose(x.grad.asnumpy(), np.linalg.det(ab) * np.linalg.inv(ab).T @ b.T, rtol=1e-10)


def test_symbolic_outputs_and_shapes():
    """det shows one output and slogdet two, as in MXNet; shapes drop the matrix axes."""
    s = mx.sym.linalg.slogdet(mx.sym.var("a"), name="s")
    assert s.list_outputs() == ["s_output0", "s_output1"]
    assert s.infer_shape(a=(4, 2, 3, 3))[1] == [(4, 2), (4, 2)]
    d = mx.sym.linalg.det(mx.sym.var("a"), name="d")
    assert d.list_outputs() == ["d_output0"] and d.infer_shape(a=(3, 3))[1] == [(1,)]
    a = RNG.standard_normal((2, 3, 3))
    ex = d.bind(mx.cpu(), {"a": mx.nd.array(a)})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.linalg.det(a), rtol=1e-5)


def test_errors():
    """Non-square input; inverse of a singular matrix; integer input."""
    for name in ("_linalg_inverse", "_linalg_det", "_linalg_slogdet"):
        with pytest.raises(MXNetError, match=r"linalg\.\w+.*square.*\(2, 3\)"):
            op_check.run_op(name, [np.ones((2, 3))])
    with pytest.raises(MXNetError, match="linalg.inverse.*non-invertible"):
        op_check.run_op("_linalg_inverse", [np.ones((2, 2))])
    with pytest.raises(MXNetError, match="32-bit and 64-bit floating point"):
        mx.nd.linalg.det(mx.nd.ones((2, 2), dtype="int32"))
