"""The C loops of ``_softmax_cross_entropy_pick`` (``mxref/_ext/loss_kernels.pyx``, the ops'
'cpu' kernels) against the numpy reference: every dtype of data and label, labels out of range,
every ``req``, matrices small and large enough to release the GIL, and the shapes that must be
left to the reference."""
import numpy as np
import pytest

import mxref.ops.nn.softmax_cross_entropy_pick as sce
from mxref.op_check import fast_and_reference
from mxref.ops import registry

needs_ext = pytest.mark.skipif(sce._EXT is None, reason="mxref._ext.loss_kernels not built or disabled")
P = {"axis": -1}
FWD, BWD = "_softmax_cross_entropy_pick", "_backward_softmax_cross_entropy_pick"


def run(op_name, p, inputs, out_shape, dtype, req, start=None):
    """One call of the kernel the table gives now (fast or reference)."""
    out = np.zeros(out_shape, dtype) if start is None else start.copy()
    registry.get_kernel(registry.get(op_name), "cpu")(None, p, inputs, [out], [req])
    return out


def both(op_name, *args):
    return fast_and_reference(lambda: run(op_name, *args), (op_name,))


def case(rng, n, c, dtype, label_dtype):
    x = (rng.standard_normal((n, c)) * 3).astype(dtype)
    label = rng.integers(-2, c + 2, n).astype(label_dtype)       # some below 0, some past c - 1
    if np.dtype(label_dtype).kind == "f":
        label = label + rng.uniform(0, 0.9, n).astype(label_dtype)   # fractions truncate
    g = rng.standard_normal(n).astype(dtype)
    return x, label, g


@needs_ext
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("label_dtype", ["float32", "float64", "int32", "int64", "uint8"])
@pytest.mark.parametrize("n,c", [(1, 1), (7, 3), (128, 10), (300, 257)])   # 300*257 > 2**16: no GIL
def test_c_kernels_match_numpy(dtype, label_dtype, n, c):
    rng = np.random.default_rng(n * c)
    x, label, g = case(rng, n, c, dtype, label_dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    fast, slow = both(FWD, P, [x, label], (n,), dtype, "write")
    np.testing.assert_allclose(fast, slow, rtol=tol, atol=tol)
    fast, slow = both(BWD, P, [g, x, label], (n, c), dtype, "write")
    np.testing.assert_allclose(fast, slow, rtol=tol, atol=tol)


@needs_ext
@pytest.mark.parametrize("req", ["add", "null", "inplace"])
def test_c_kernels_follow_req(req):
    rng = np.random.default_rng(1)
    x, label, g = case(rng, 16, 5, "float32", "float32")
    start_f, start_b = rng.standard_normal(16).astype("f4"), rng.standard_normal((16, 5)).astype("f4")
    fast, slow = both(FWD, P, [x, label], (16,), "f4", req, start_f)
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
    fast, slow = both(BWD, P, [g, x, label], (16, 5), "f4", req, start_b)
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
    if req == "null":
        np.testing.assert_array_equal(fast, start_b)


@needs_ext
def test_c_kernels_on_large_logits_and_strided_data():
    """Logits of +-1e4 (exp would overflow without the row maximum) and a transposed view."""
    rng = np.random.default_rng(2)
    x = np.ascontiguousarray((rng.standard_normal((6, 9)) * 1e4).astype("f4").T)[:, :6].T   # strided (6, 9)
    assert not x.flags.c_contiguous
    label = rng.integers(0, 9, 6).astype("f4")
    g = np.ones(6, "f4")
    fast, slow = both(FWD, P, [x, label], (6,), "f4", "write")
    np.testing.assert_allclose(fast, slow, rtol=1e-5)
    assert np.isfinite(fast).all()
    fast, slow = both(BWD, P, [g, x, label], (6, 9), "f4", "write")
    np.testing.assert_allclose(fast, slow, atol=1e-6)


def test_cases_the_c_kernels_leave_to_numpy():
    """Classes on axis 0, 3-D data, float16 and an ograd of another dtype take the twin."""
    for p, data in (({"axis": 0}, np.zeros((4, 3), "f4")), (P, np.zeros((2, 4, 3), "f4")),
                    (P, np.zeros((4, 3), "f2")), (P, np.zeros((4, 0), "f4"))):
        label = np.zeros(data.shape[1 if p["axis"] == 0 else 0], "f4")
        assert not sce._c_takes(p, [data, label], [], ["write"])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4)).astype("f4")
    label = np.array([0, 1, 2, 3, 0], "f4")
    g = np.ones(5, "f8")                          # ograd in float64 for float32 data
    assert not sce._c_takes(P, [g, x, label], [], ["write"])
    out = run(BWD, P, [g, x, label], (5, 4), "f4", "write")
    e = np.exp(x - x.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    want[np.arange(5), label.astype(int)] -= 1
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_loss_and_gradient_against_the_formula(dtype):
    """Whichever path is active: the loss is -log softmax at the (clipped) label, the gradient
    g * (softmax - onehot)."""
    rng = np.random.default_rng(4)
    x, label, g = case(rng, 9, 6, dtype, "float32")
    k = np.clip(label.astype(np.int64), 0, 5)
    xd = x.astype(np.float64)
    logp = xd - xd.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    loss = run(FWD, P, [x, label], (9,), dtype, "write")
    np.testing.assert_allclose(loss, -logp[np.arange(9), k], rtol=1e-5)
    grad = run(BWD, P, [g, x, label], (9, 6), dtype, "write")
    want = np.exp(logp)
    want[np.arange(9), k] -= 1
    np.testing.assert_allclose(grad, want * g[:, None], rtol=1e-4, atol=1e-6)
