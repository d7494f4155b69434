"""linalg.gemm / gemm2: batched products, transposes, alpha/beta, the row ``axis``, gradients,
shape rules and errors, imperative and symbolic."""
import numpy as np
import pytest

import mxref as mx
from mxref import op_check
from mxref.base import MXNetError

RNG = np.random.default_rng(11)


def _op(x, t):
    return np.swapaxes(x, -1, -2) if t else x


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_values_batch_and_gradient(ta, tb):
    """gemm = alpha op(A) op(B) + beta C on a (2, 3) batch; all three gradients by central differences."""
    a = RNG.standard_normal((2, 3, 4, 5) if ta else (2, 3, 5, 4))
    b = RNG.standard_normal((2, 3, 6, 4) if tb else (2, 3, 4, 6))
    c = RNG.standard_normal((2, 3, 5, 6))
    p = {"transpose_a": ta, "transpose_b": tb, "alpha": 1.5, "beta": -2.0}
    (y,) = op_check.run_op("_linalg_gemm", [a, b, c], p)
    np.testing.assert_allclose(y, 1.5 * _op(a, ta) @ _op(b, tb) - 2.0 * c, rtol=1e-12, atol=1e-12)
    op_check.check_op_gradient("_linalg_gemm", [a[:1, :2], b[:1, :2], c[:1, :2]], p, is_train=False)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_gemm2_values_and_gradient(ta, tb):
    """gemm2 = alpha op(A) op(B); float32 stays float32."""
    a = RNG.standard_normal((3, 4, 2) if ta else (3, 2, 4))
    b = RNG.standard_normal((3, 5, 4) if tb else (3, 4, 5))
    p = {"transpose_a": ta, "transpose_b": tb, "alpha": -0.5}
    (y,) = op_check.run_op("_linalg_gemm2", [a.astype(np.float32), b.astype(np.float32)], p)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, -0.5 * _op(a, ta) @ _op(b, tb), rtol=1e-5, atol=1e-6)
    op_check.check_op_gradient("_linalg_gemm2", [a, b], p, is_train=False)


@pytest.mark.parametrize("axis", [0, 1, -3])
def test_row_axis_is_swapaxes(axis):
    """A non-default axis holds the rows: the same as swapaxes(axis, -2) around the product."""
    a, b, c = RNG.standard_normal((3, 2, 4)), RNG.standard_normal((3, 4, 5)), RNG.standard_normal((3, 2, 5))
    a4, b4, c4 = (np.stack([x, x + 1]) for x in (a, b, c))               # (2, 3, m, n)
    sw = (lambda x: np.ascontiguousarray(np.swapaxes(x, axis, -2)))
    p = {"axis": axis, "alpha": 2.0, "beta": 0.5}
    (y,) = op_check.run_op("_linalg_gemm", [sw(a4), sw(b4), sw(c4)], p)
    np.testing.assert_allclose(y, sw(2.0 * a4 @ b4 + 0.5 * c4), rtol=1e-12)
    (y2,) = op_check.run_op("_linalg_gemm2", [sw(a4), sw(b4)], {"axis": axis})
    np.testing.assert_allclose(y2, sw(a4 @ b4), rtol=1e-12)
    op_check.check_op_gradient("_linalg_gemm", [sw(a4[:, :1]), sw(b4[:, :1]), sw(c4[:, :1])], p,
                               is_train=False)


def test_large_and_batched_products_match_numpy():
    """The threaded paths (one big GEMM split by rows, a batch split by matrices) give matmul's values."""
    a, b = RNG.standard_normal((300, 200)), RNG.standard_normal((200, 250))
    np.testing.assert_allclose(op_check.run_op("_linalg_gemm2", [a, b])[0], a @ b, rtol=1e-12)
    a, b = RNG.standard_normal((16, 64, 64)).astype("f4"), RNG.standard_normal((16, 64, 64)).astype("f4")
    np.testing.assert_allclose(op_check.run_op("_linalg_gemm2", [a, b])[0], a @ b, rtol=1e-5, atol=1e-4)


def test_shape_errors_name_the_op_and_shapes():
    """Incompatible inner dimensions, different batches, bad axis, wrong rank, wrong C, non-floats."""
    with pytest.raises(MXNetError, match=r"linalg.gemm2.*incompatible.*\(2, 3\).*\(2, 3\)"):
        op_check.run_op("_linalg_gemm2", [np.ones((2, 3)), np.ones((2, 3))])
    with pytest.raises(MXNetError, match=r"linalg.gemm2.*\(2, 2, 3\).*\(3, 3, 2\)"):
        op_check.run_op("_linalg_gemm2", [np.ones((2, 2, 3)), np.ones((3, 3, 2))])
    with pytest.raises(MXNetError, match=r"linalg.gemm2.*axis=-1"):
        op_check.run_op("_linalg_gemm2", [np.ones((2, 2)), np.ones((2, 2))], {"axis": -1})
    with pytest.raises(MXNetError, match=r"linalg.gemm.*'A'.*at least 2"):
        op_check.run_op("_linalg_gemm", [np.ones(3), np.ones(3), np.ones(1)])
    with pytest.raises(MXNetError, match=r"linalg.gemm.*C.*\(3, 3\).*\(2, 2\)"):
        op_check.run_op("_linalg_gemm", [np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 3))])
    with pytest.raises(MXNetError, match="32-bit and 64-bit floating point"):
        mx.nd.linalg.gemm2(mx.nd.ones((2, 2), dtype="int32"), mx.nd.ones((2, 2), dtype="int32"))


def test_imperative_autograd_and_aliases():
    """mx.nd.linalg.gemm2 and mx.nd.linalg_gemm2 are one op; autograd gives alpha G B^T and alpha A^T G."""
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 2))
    x, w = mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64")
    x.attach_grad()
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.linalg.gemm2(x, w, alpha=3.0)
    y.backward()
    np.testing.assert_allclose(mx.nd.linalg_gemm2(x, w, alpha=3.0).asnumpy(), y.asnumpy())
    np.testing.assert_allclose(x.grad.asnumpy(), 3.0 * np.ones((2, 3, 2)) @ np.swapaxes(b, 1, 2))
    np.testing.assert_allclose(w.grad.asnumpy(), 3.0 * np.swapaxes(a, 1, 2) @ np.ones((2, 3, 2)))


def test_symbolic_infer_shape_and_bind():
    """mx.sym.linalg.gemm infers the output (and C) from A and B; names are A, B, C as in MXNet."""
    s = mx.sym.linalg.gemm(mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c"), transpose_a=True, beta=0.0)
    _, out, _ = s.infer_shape(a=(5, 4, 2), b=(5, 4, 3))
    assert out == [(5, 2, 3)]
    arg, _, _ = s.infer_shape(a=(5, 4, 2), b=(5, 4, 3))
    assert arg == [(5, 4, 2), (5, 4, 3), (5, 2, 3)]
    assert mx.sym.linalg.gemm2(mx.sym.var("a"), mx.sym.var("b")).list_arguments() == ["a", "b"]
    assert mx.sym.linalg_gemm2(name="g").list_arguments() == ["g_A", "g_B"]
    a, b = RNG.standard_normal((5, 4, 2)), RNG.standard_normal((5, 4, 3))
    ex = s.bind(mx.cpu(), {"a": mx.nd.array(a), "b": mx.nd.array(b), "c": mx.nd.ones((5, 2, 3))})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.swapaxes(a, 1, 2) @ b, rtol=1e-5, atol=1e-5)
