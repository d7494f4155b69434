"""Sparse gradients through autograd and Gluon: Embedding(sparse_grad=True), SparseEmbedding,
row_sparse Parameters and the Trainer with them."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon


def _loss(y):
    return (y * y).sum() + y.sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_sparse_grad_equals_the_dense_gradient_rows(dtype):
    """The row_sparse gradient holds exactly the looked-up rows (duplicates summed), and those rows
    equal the dense gradient's; the dense gradient is zero elsewhere."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((12, 3)).astype(dtype)
    idx = mx.nd.array([[4, 1, 4], [9, 1, 0]])
    grads = {}
    for sparse in (True, False):
        wa = mx.nd.array(w, dtype=dtype)
        wa.attach_grad(stype="row_sparse" if sparse else None)
        with autograd.record():
            loss = _loss(mx.nd.Embedding(idx, wa, input_dim=12, output_dim=3, sparse_grad=sparse))
        loss.backward()
        grads[sparse] = wa.grad
    rsp, dense = grads[True], grads[False].asnumpy()
    assert rsp.stype == "row_sparse"
    assert rsp.indices.asnumpy().tolist() == [0, 1, 4, 9]
    np.testing.assert_allclose(rsp.data.asnumpy(), dense[[0, 1, 4, 9]], rtol=1e-6)
    assert not np.any(np.delete(dense, [0, 1, 4, 9], axis=0))


def test_sparse_dot_gradient_is_row_sparse():
    """dot(csr, w): w's gradient is csrᵀ·dout, row_sparse on the columns the batch uses."""
    rng = np.random.default_rng(1)
    x = np.zeros((4, 10), np.float32)
    x[0, 2], x[1, 7], x[3, 2], x[3, 5] = 1, 2, 3, 4
    w = rng.standard_normal((10, 2)).astype(np.float32)
    wa = mx.nd.array(w)
    wa.attach_grad(stype="row_sparse")
    with autograd.record():
        loss = _loss(mx.nd.sparse.dot(mx.nd.sparse.csr_matrix(x), wa))
    loss.backward()
    out = x @ w
    want = x.T @ (2 * out + 1)
    assert wa.grad.stype == "row_sparse" and wa.grad.indices.asnumpy().tolist() == [2, 5, 7]
    np.testing.assert_allclose(wa.grad.asnumpy(), want, rtol=1e-5)


def test_grad_req_add_accumulates_row_sparse_gradients():
    w = mx.nd.ones((6, 2))
    w.attach_grad(grad_req="add", stype="row_sparse")
    for ids in ([1, 2], [2, 4]):
        with autograd.record():
            y = mx.nd.Embedding(mx.nd.array(ids), w, input_dim=6, output_dim=2, sparse_grad=True)
        y.backward()
    assert w.grad.stype == "row_sparse" and w.grad.indices.asnumpy().tolist() == [1, 2, 4]
    np.testing.assert_array_equal(w.grad.asnumpy()[:, 0], [0, 1, 2, 0, 1, 0])


def _train(block, steps, batches, optimizer="sgd", params=None):
    block.initialize(mx.init.Constant(0.5))
    trainer = gluon.Trainer(block.collect_params(), optimizer, params or {"learning_rate": 0.3})
    for x in batches[:steps]:
        with autograd.record():
            loss = _loss(block(x))
        loss.backward()
        trainer.step(x.shape[0])
    return block


@pytest.mark.parametrize("layer", ["sparse_grad", "SparseEmbedding"])
def test_sparse_embedding_training_matches_dense_sgd(layer):
    """Plain SGD (no wd, no momentum) gives the same weights lazily as densely: untouched rows have
    zero gradient either way."""
    rng = np.random.default_rng(2)
    batches = [mx.nd.array(rng.integers(0, 30, (4, 3))) for _ in range(3)]
    dense = _train(gluon.nn.Embedding(30, 5), 3, batches)
    if layer == "sparse_grad":
        sparse = _train(gluon.nn.Embedding(30, 5, sparse_grad=True), 3, batches)
        assert sparse.weight.grad().stype == "row_sparse" and sparse.weight.data().stype == "default"
    else:
        sparse = _train(gluon.contrib.nn.SparseEmbedding(30, 5), 3, batches)
        assert sparse.weight.data().stype == "row_sparse"
        assert sparse.weight.grad().stype == "row_sparse"
    np.testing.assert_allclose(sparse.weight.data().asnumpy(), dense.weight.data().asnumpy(), rtol=1e-6)


def test_lazy_momentum_leaves_untouched_rows_alone():
    """With momentum, a lazy Trainer step changes only the rows of the last batch."""
    net = gluon.nn.Embedding(10, 2, sparse_grad=True)
    batches = [mx.nd.array([1, 2]), mx.nd.array([5])]
    _train(net, 1, batches, "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    before = net.weight.data().asnumpy()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    with autograd.record():
        loss = _loss(net(batches[1]))
    loss.backward()
    trainer.step(1)
    changed = np.flatnonzero(np.any(net.weight.data().asnumpy() != before, axis=1))
    assert changed.tolist() == [5]


def test_row_sparse_parameter_api():
    p = gluon.Parameter("w", shape=(6, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(mx.init.Constant(1.0))
    assert p.stype == "row_sparse" and p.grad_stype == "row_sparse"
    row_id = mx.nd.array([0, 3])
    got = p.row_sparse_data(row_id)
    assert got.stype == "row_sparse"
    np.testing.assert_array_equal(got.asnumpy()[[0, 3]], 1)
    assert len(p.list_row_sparse_data(row_id)) == 1
    assert p.grad().stype == "row_sparse"
    dense = gluon.Parameter("d", shape=(2,))
    dense.initialize()
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        dense.row_sparse_data(row_id)
    with pytest.raises(AssertionError, match="stype must be"):
        gluon.Parameter("bad", shape=(2,), stype="coo")


@pytest.mark.parametrize("plain", [True, False])
def test_take_of_a_row_sparse_array_has_a_row_sparse_gradient(plain):
    """take(rsp, ids) backward: row_sparse, repeated ids summed, on both backward paths."""
    from mxref.ndarray import imperative
    rng = np.random.default_rng(5)
    dense = rng.standard_normal((10, 3)).astype(np.float32)
    with imperative.plain_paths(plain):
        w = mx.nd.array(dense).tostype("row_sparse")
        w.attach_grad(stype="row_sparse")
        with autograd.record():
            loss = _loss(mx.nd.take(w, mx.nd.array([1, 3, 3])))
        loss.backward()
    assert w.grad.stype == "row_sparse" and w.grad.indices.asnumpy().tolist() == [1, 3]
    want = np.zeros_like(dense)
    want[1] = 2 * dense[1] + 1
    want[3] = 2 * (2 * dense[3] + 1)
    np.testing.assert_allclose(w.grad.asnumpy(), want, rtol=1e-6)


@pytest.mark.parametrize("kvstore", ["local", "device"])
def test_trainer_sums_row_sparse_gradients_over_devices(kvstore):
    """Two contexts, a local store: row 2 is touched on both devices and gets both gradients."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = gluon.nn.Embedding(20, 3, sparse_grad=True)
    net.initialize(mx.init.Constant(1.0), ctx=ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=kvstore)
    xs = [mx.nd.array([1, 2], ctx=ctxs[0]), mx.nd.array([2, 5], ctx=ctxs[1])]
    with autograd.record():
        losses = [net(x).sum() for x in xs]
    for loss in losses:
        loss.backward()
    assert net.weight.grad(ctxs[0]).stype == "row_sparse"
    trainer.step(1)
    want = np.ones((20, 3), np.float32)
    want[[1, 5]] = 0.9
    want[2] = 0.8
    for c in ctxs:
        np.testing.assert_allclose(net.weight.data(c).asnumpy(), want, rtol=1e-6)
