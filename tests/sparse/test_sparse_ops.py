"""Sparse operators against dense numpy references (mxref/ops/sparse/), in float32 and float64."""
import logging

import numpy as np
import pytest

import mxref as mx
from mxref import _ext
from mxref.ndarray import storage_dispatch
from mxref.ops.sparse import dot as sparse_dot
from mxref.ops.sparse.base import CSR

DTYPES = [np.float32, np.float64]
TOL = {np.float32: 1e-5, np.float64: 1e-12}


def _dense(shape, density, seed, dtype, empty_rows=(1,)):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    a[rng.random(shape) > density] = 0
    for r in empty_rows:
        if r < shape[0]:
            a[r] = 0
    return a


def _close(got, want, dtype):
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("density", [0.0, 0.2, 1.0])
def test_dot_csr_dense_is_dense(dtype, density):
    """csr·dense = dense, all-zero and fully dense csr included, and with a 1-D rhs."""
    a = _dense((9, 7), density, 0, dtype)
    b = _dense((7, 4), 1.0, 1, dtype, empty_rows=())
    out = mx.nd.sparse.dot(mx.nd.sparse.csr_matrix(a), mx.nd.array(b, dtype=dtype))
    assert out.stype == "default" and out.dtype == dtype
    _close(out.asnumpy(), a @ b, dtype)
    v = mx.nd.sparse.dot(mx.nd.sparse.csr_matrix(a), mx.nd.array(b[:, 0], dtype=dtype))
    _close(v.asnumpy(), a @ b[:, 0], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_csr_transposed_is_row_sparse_of_used_columns(dtype):
    """csrᵀ·dense = row_sparse holding exactly the columns the csr uses (sorted)."""
    a = _dense((8, 12), 0.2, 2, dtype)
    b = _dense((8, 3), 1.0, 3, dtype, empty_rows=())
    out = mx.nd.sparse.dot(mx.nd.sparse.csr_matrix(a), mx.nd.array(b, dtype=dtype), transpose_a=True)
    assert out.stype == "row_sparse" and out.shape == (12, 3)
    assert out.indices.asnumpy().tolist() == np.flatnonzero(np.any(a != 0, axis=0)).tolist()
    _close(out.asnumpy(), a.T @ b, dtype)
    fwd = mx.nd.sparse.dot(mx.nd.sparse.csr_matrix(a), mx.nd.array(b, dtype=dtype), transpose_a=True,
                           forward_stype="default")
    assert fwd.stype == "default"
    _close(fwd.asnumpy(), a.T @ b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_dense_csr_and_csr_row_sparse(dtype):
    """dense·csr = csr (forward_stype='default': dense); csr·row_sparse = dense."""
    d = _dense((3, 6), 1.0, 4, dtype, empty_rows=())
    a = _dense((6, 5), 0.3, 5, dtype)
    out = mx.nd.sparse.dot(mx.nd.array(d, dtype=dtype), mx.nd.sparse.csr_matrix(a))
    assert out.stype == "csr"
    _close(out.asnumpy(), d @ a, dtype)
    out = mx.nd.sparse.dot(mx.nd.array(d, dtype=dtype), mx.nd.sparse.csr_matrix(a), forward_stype="default")
    assert out.stype == "default"
    _close(out.asnumpy(), d @ a, dtype)
    w = _dense((5, 2), 1.0, 6, dtype, empty_rows=(0, 3))
    r = mx.nd.sparse.row_sparse_array(w)
    assert r.indices.asnumpy().tolist() == [1, 2, 4]
    out = mx.nd.sparse.dot(mx.nd.sparse.csr_matrix(a), r)
    assert out.stype == "default"
    _close(out.asnumpy(), a @ w, dtype)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_fast_loops_match_the_numpy_reference(dtype, threads, monkeypatch):
    """The Cython csr·dense and csrᵀ·dense loops (one thread, or split over two) agree with the
    numpy kernels."""
    if sparse_dot._fast is None:
        pytest.skip("mxref._ext.sparse_kernels is not built")
    from mxref.ops import parallel
    monkeypatch.setattr(parallel, "NUM_THREADS", threads)
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 16)
    rng = np.random.default_rng(7)
    m, k, n = 40, 300, 16
    rows = [np.sort(rng.choice(k, size=rng.integers(0, 12), replace=False)) for _ in range(m)]
    indptr = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    a = CSR(rng.standard_normal(indptr[-1]).astype(dtype), np.concatenate(rows).astype(np.int64),
            indptr, (m, k))
    b = rng.standard_normal((k, n)).astype(dtype)
    c = rng.standard_normal((m, n)).astype(dtype)
    np.testing.assert_allclose(sparse_dot._csr_dns(a, b), sparse_dot.csr_dns(a, b), rtol=TOL[dtype],
                               atol=TOL[dtype])
    fast, ref = sparse_dot._csrt_dns(a, c), sparse_dot.csrt_dns(a, c)
    assert fast.indices.tolist() == ref.indices.tolist()
    np.testing.assert_allclose(fast.data, ref.data, rtol=TOL[dtype], atol=TOL[dtype])
    with _ext.reference_kernels():
        assert not sparse_dot._use_fast(a, b)


ZERO_KEEPING = ["abs", "sign", "sqrt", "square", "relu", "negative", "floor", "tanh", "expm1"]


@pytest.mark.parametrize("name", ZERO_KEEPING)
@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_zero_preserving_unary_ops_keep_the_stype(name, stype):
    a = np.abs(_dense((5, 4), 0.4, 8, np.float64)) if name == "sqrt" else _dense((5, 4), 0.4, 8, np.float64)
    x = mx.nd.array(a, dtype=np.float64)
    out = getattr(mx.nd, name)(x.tostype(stype))
    assert out.stype == stype
    np.testing.assert_array_equal(out.asnumpy(), getattr(mx.nd, name)(x).asnumpy())


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_scalar_multiply_and_divide_keep_the_stype(stype):
    a = _dense((4, 3), 0.5, 9, np.float32)
    x = mx.nd.array(a).tostype(stype)
    for out, want in ((x * 3, a * 3), (x / 4, a / 4), (2 * x, 2 * a)):
        assert out.stype == stype
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_sparse_sums_union_the_rows(dtype):
    """rsp + rsp, rsp - rsp and add_n of rsp stay row_sparse (union of ids); a dense operand: dense."""
    a = mx.nd.sparse.row_sparse_array((np.ones((2, 3)), [5, 1]), shape=(6, 3), dtype=dtype)
    b = mx.nd.sparse.row_sparse_array((np.full((2, 3), 2.0), [1, 4]), shape=(6, 3), dtype=dtype)
    e = mx.nd.sparse.zeros("row_sparse", (6, 3), dtype=dtype)
    da, db = a.asnumpy(), b.asnumpy()
    s = a + b
    assert s.stype == "row_sparse" and s.indices.asnumpy().tolist() == [1, 4, 5]
    _close(s.asnumpy(), da + db, dtype)
    _close(mx.nd.elemwise_sub(a, b).asnumpy(), da - db, dtype)
    n = mx.nd.add_n(a, b, e, a)
    assert n.stype == "row_sparse"
    _close(n.asnumpy(), 2 * da + db, dtype)
    d = mx.nd.ones((6, 3), dtype=dtype)
    for mixed in (a + d, d + b, mx.nd.add_n(d, a, b)):
        assert mixed.stype == "default"
    _close(mx.nd.add_n(d, a, b).asnumpy(), 1 + da + db, dtype)
    c = mx.nd.sparse.csr_matrix(da) + mx.nd.sparse.csr_matrix(db)
    assert c.stype == "csr"
    _close(c.asnumpy(), da + db, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_and_mean_of_csr_along_an_axis(dtype):
    a = _dense((6, 5), 0.3, 10, dtype)
    c = mx.nd.sparse.csr_matrix(a)
    for axis in (0, 1, -1):
        _close(mx.nd.sum(c, axis=axis).asnumpy(), a.sum(axis=axis), dtype)
        _close(mx.nd.mean(c, axis=axis).asnumpy(), a.mean(axis=axis), dtype)
        _close(mx.nd.sum(c, axis=axis, keepdims=True).asnumpy(), a.sum(axis=axis, keepdims=True), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_square_sum_of_row_sparse(dtype):
    """_square_sum(rsp, axis=1, keepdims=True) is row_sparse with one value per stored row."""
    a = _dense((7, 3), 0.5, 11, dtype, empty_rows=(0, 4))
    r = mx.nd.array(a, dtype=dtype).tostype("row_sparse")
    out = mx.nd.sparse.square_sum(r, axis=1, keepdims=True)
    assert out.stype == "row_sparse" and out.shape == (7, 1)
    _close(out.asnumpy(), (a * a).sum(axis=1, keepdims=True), dtype)
    for axis in (0, None):
        kw = {} if axis is None else {"axis": axis}
        dense = mx.nd.sparse.square_sum(r, **kw)
        assert dense.stype == "default"
        _close(dense.asnumpy(), (a * a).sum(axis=axis).reshape(dense.shape), dtype)


def test_broadcast_mul_and_div_of_csr_by_a_vector():
    a = _dense((4, 5), 0.4, 12, np.float32)
    c = mx.nd.sparse.csr_matrix(a)
    row = np.arange(1, 6, dtype=np.float32).reshape(1, 5)
    col = np.arange(1, 5, dtype=np.float32).reshape(4, 1)
    for v in (row, col):
        m = mx.nd.broadcast_mul(c, mx.nd.array(v))
        d = mx.nd.broadcast_div(c, mx.nd.array(v))
        assert m.stype == d.stype == "csr"
        np.testing.assert_allclose(m.asnumpy(), a * v, rtol=1e-6)
        np.testing.assert_allclose(d.asnumpy(), a / v, rtol=1e-6)


def test_where_with_a_csr_condition():
    cond = np.array([[0, 1, 0], [2, 0, 0]], dtype=np.float32)
    x, y = np.full((2, 3), 7, np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)
    out = mx.nd.where(mx.nd.sparse.csr_matrix(cond), mx.nd.array(x), mx.nd.array(y))
    assert out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy(), np.where(cond != 0, x, y))


def test_embedding_and_take_read_row_sparse_weights():
    """A row_sparse weight reads zeros for the rows it does not store."""
    w = np.arange(12, dtype=np.float32).reshape(6, 2)
    w[[0, 3]] = 0
    r = mx.nd.array(w).tostype("row_sparse")
    idx = mx.nd.array([[3, 1], [5, 1]])
    e = mx.nd.Embedding(idx, r, input_dim=6, output_dim=2)
    np.testing.assert_array_equal(e.asnumpy(), w[[[3, 1], [5, 1]]])
    t = mx.nd.take(r, mx.nd.array([4, 0, 9]))
    np.testing.assert_array_equal(t.asnumpy(), w[[4, 0, 5]])


def test_unsupported_combination_falls_back_once_and_is_correct(caplog):
    """An op without a kernel for these stypes runs dense; one warning names the op, once."""
    storage_dispatch.reset_fallback_log()
    a = _dense((3, 4), 0.5, 13, np.float32)
    c = mx.nd.sparse.csr_matrix(a)
    with caplog.at_level(logging.WARNING, logger="mxref.sparse"):
        for _ in range(3):
            out = mx.nd.exp(c)                 # exp(0) = 1: no zero-keeping kernel
            np.testing.assert_allclose(out.asnumpy(), np.exp(a), rtol=1e-6)
        plus = c + 1.0
        np.testing.assert_allclose(plus.asnumpy(), a + 1, rtol=1e-6)
    logs = [r.getMessage() for r in caplog.records if r.name == "mxref.sparse"]
    assert sum("operator = exp" in m for m in logs) == 1, logs
    assert sum("operator = _plus_scalar" in m for m in logs) == 1, logs
    assert "['csr']" in next(m for m in logs if "operator = exp" in m)
    assert out.stype == "default"


def test_fallback_into_a_sparse_out_array(caplog):
    """A dense kernel writing into a sparse out= array: the result is cast into it."""
    storage_dispatch.reset_fallback_log()
    r = mx.nd.sparse.zeros("row_sparse", (3, 2))
    with caplog.at_level(logging.WARNING, logger="mxref.sparse"):
        mx.nd.exp(mx.nd.zeros((3, 2)), out=r)
    assert r.stype == "row_sparse"
    np.testing.assert_array_equal(r.asnumpy(), np.ones((3, 2)))
    assert any("operator = exp" in rec.getMessage() for rec in caplog.records)


def test_fallback_log_can_be_silenced(caplog, monkeypatch):
    storage_dispatch.reset_fallback_log()
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
    with caplog.at_level(logging.WARNING, logger="mxref.sparse"):
        mx.nd.exp(mx.nd.sparse.zeros("csr", (2, 2))).asnumpy()
    assert not [r for r in caplog.records if r.name == "mxref.sparse"]


def test_plain_and_tuned_dispatch_agree():
    """Both invoke paths route sparse calls the same way and give the same values."""
    from mxref.ndarray import imperative
    a = _dense((6, 5), 0.3, 14, np.float32)
    b = _dense((5, 3), 1.0, 15, np.float32, empty_rows=())
    results = []
    for plain in (True, False):
        with imperative.plain_paths(plain):
            c = mx.nd.sparse.csr_matrix(a)
            d = mx.nd.sparse.dot(c, mx.nd.array(b))
            r = (mx.nd.array(a).tostype("row_sparse") * 2) + mx.nd.array(a).tostype("row_sparse")
            results.append((d.stype, d.asnumpy(), r.stype, r.asnumpy()))
    assert results[0][0] == results[1][0] and results[0][2] == results[1][2] == "row_sparse"
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][3], results[1][3])


def test_unique_columns_fast_and_reference_agree():
    """The radix-sort unique of the csrᵀ·dense fast path is np.unique with return_inverse (column
    counts needing one, two and three passes)."""
    rng = np.random.default_rng(16)
    for n, k in ((0, 10), (50, 10), (1, 1), (300, 100000), (500, 1 << 30), (200, 2048)):
        ids = rng.integers(0, k, n).astype(np.int64)
        cols, slot = sparse_dot.unique_columns(ids, k)
        want_cols, want_slot = np.unique(ids, return_inverse=True)
        assert cols.tolist() == want_cols.tolist() and slot.tolist() == want_slot.reshape(-1).tolist()
        with _ext.reference_kernels():
            rc, rs = sparse_dot.unique_columns(ids, k)
        assert rc.tolist() == want_cols.tolist() and rs.tolist() == want_slot.reshape(-1).tolist()


def test_contrib_sparse_embedding_always_gives_a_row_sparse_gradient():
    """mx.sym.contrib.SparseEmbedding: Embedding's forward; its weight gradient is row_sparse
    (unique ids, sorted, rows summed) without sparse_grad; a row_sparse weight works too."""
    wv = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = np.array([[0, 3], [3, 4]], np.float32)
    out = mx.nd.contrib.SparseEmbedding(mx.nd.array(idx), mx.nd.array(wv), input_dim=5, output_dim=3)
    np.testing.assert_array_equal(out.asnumpy(), wv[idx.astype(int)])
    w = mx.sym.Variable("w", stype="row_sparse")
    s = mx.sym.contrib.SparseEmbedding(mx.sym.Variable("d"), weight=w, input_dim=5, output_dim=3)
    assert s.list_arguments() == ["d", "w"] and s.infer_shape(d=(2, 2))[1] == [(2, 2, 3)]
    ex = s.simple_bind(mx.cpu(), d=(2, 2), stype_dict={"w": "row_sparse"})
    ex.arg_dict["w"][:] = mx.nd.array(wv).tostype("row_sparse")
    ex.arg_dict["d"][:] = mx.nd.array(idx)
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), wv[idx.astype(int)])
    ex.backward(mx.nd.ones((2, 2, 3)))
    g = ex.grad_dict["w"]
    assert g.stype == "row_sparse" and g.indices.asnumpy().tolist() == [0, 3, 4]
    np.testing.assert_array_equal(g.asnumpy()[[0, 1, 3, 4], 0], [1, 0, 2, 1])
    x = mx.nd.array(wv)
    x.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        y = mx.nd.contrib.SparseEmbedding(mx.nd.array([1, 1]), x, input_dim=5, output_dim=3)
    y.backward()
    assert x.grad.stype == "row_sparse" and x.grad.indices.asnumpy().tolist() == [1]
    np.testing.assert_array_equal(x.grad.data.asnumpy(), [[2, 2, 2]])
