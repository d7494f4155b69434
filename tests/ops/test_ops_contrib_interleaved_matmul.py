"""contrib.interleaved_matmul_*: attention scores and weighted values from interleaved projections,
checked against MXNet 1.9.1's numbers and against plain numpy, with gradients."""
import numpy as np
from ops_check import check_numeric_grad, run_op

import mxref as mx


def _data():
    rs = np.random.RandomState(0)
    return (rs.rand(4, 2, 18), rs.rand(4, 4, 4), rs.rand(3, 2, 6), rs.rand(4, 2, 12), rs.rand(4, 3, 4))


def test_values_match_mxnet():
    """Rows MXNet 1.9.1 printed for these inputs (float32)."""
    qkv, att, q, kv, att2 = (mx.nd.array(a) for a in _data())
    np.testing.assert_allclose(mx.nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2).asnumpy()[1, 2],
                               [0.19854212, 0.31687683, 0.3545397, 0.57427067], rtol=1e-5)
    np.testing.assert_allclose(
        mx.nd.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=2).asnumpy()[1, 1],
        [0.48905563, 0.25655288, 1.0455825, 0.34682238, 0.47634453, 0.6803374], rtol=1e-5)
    np.testing.assert_allclose(mx.nd.contrib.interleaved_matmul_encdec_qk(q, kv, heads=2).asnumpy()[3, 1],
                               [0.22571804, 0.5456846, 0.356492, 0.47450584], rtol=1e-5)
    np.testing.assert_allclose(
        mx.nd.contrib.interleaved_matmul_encdec_valatt(kv, att2, heads=2).asnumpy()[2, 1],
        [0.36892623, 0.58639944, 0.2847649, 1.3582728, 1.2079635, 0.8493217], rtol=1e-5)


def test_against_plain_attention():
    qkv, att, q, kv, att2 = _data()
    x = qkv.reshape(4, 2, 2, 3, 3)                       # (L, B, H, [q, k, v], D)
    (s,) = run_op("_contrib_interleaved_matmul_selfatt_qk", qkv, heads=2)
    want = np.einsum("ibhd,jbhd->bhij", x[..., 0, :], x[..., 1, :]).reshape(4, 4, 4) / np.sqrt(3)
    np.testing.assert_allclose(s, want, rtol=1e-12)
    (o,) = run_op("_contrib_interleaved_matmul_encdec_valatt", kv, att2, heads=2)
    v = kv.reshape(4, 2, 2, 2, 3)[..., 1, :]
    want = np.einsum("bhij,jbhd->ibhd", att2.reshape(2, 2, 3, 4), v).reshape(3, 2, 6)
    np.testing.assert_allclose(o, want, rtol=1e-12)


def test_gradients():
    qkv, att, q, kv, att2 = _data()
    check_numeric_grad("_contrib_interleaved_matmul_selfatt_qk", qkv, heads=2)
    check_numeric_grad("_contrib_interleaved_matmul_selfatt_valatt", qkv, att, heads=2)
    check_numeric_grad("_contrib_interleaved_matmul_encdec_qk", q, kv, heads=2)
    check_numeric_grad("_contrib_interleaved_matmul_encdec_valatt", kv, att2, heads=2)


def test_symbol_shapes():
    s = mx.sym.contrib.interleaved_matmul_encdec_qk(mx.sym.var("q"), mx.sym.var("kv"), heads=2)
    assert s.infer_shape(q=(3, 2, 6), kv=(4, 2, 12))[1] == [(4, 3, 4)]
    s = mx.sym.contrib.interleaved_matmul_selfatt_valatt(mx.sym.var("x"), mx.sym.var("a"), heads=2)
    assert s.infer_shape(x=(4, 2, 18), a=(4, 4, 4))[1] == [(4, 2, 6)]
