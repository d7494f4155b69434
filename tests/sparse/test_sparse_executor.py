"""Storage types in graphs: the infer_storage_type pass, executors with sparse arguments and
gradients (simple_bind / bind with stype), and Module training with a row_sparse weight."""
import logging

import numpy as np
import pytest

import mxref as mx
from mxref.graph import Graph, apply_pass
from mxref.ndarray import storage_dispatch


def _logreg(num_features):
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("weight", shape=(num_features, 1), stype="row_sparse")
    b = mx.sym.Variable("bias", shape=(1,))
    out = mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b)
    return mx.sym.LogisticRegressionOutput(out, mx.sym.Variable("softmax_label"), name="out")


def _batch(rng, n, k, nnz=3):
    d = np.zeros((n, k), np.float32)
    for i in range(n):
        if i % 4 != 1:           # some empty rows
            d[i, rng.choice(k, nnz, replace=False)] = rng.standard_normal(nnz)
    return d


def test_pass_infers_stypes_and_dispatch_modes():
    """csr·row_sparse runs its sparse kernel (dense out); exp of a csr falls back; dense stays dense."""
    x = mx.sym.Variable("x", stype="csr")
    w = mx.sym.Variable("w", stype="row_sparse")
    d = mx.sym.Variable("d")
    out = mx.sym.Group([mx.sym.sparse.dot(x, w), mx.sym.exp(x), mx.sym.relu(d), mx.sym.abs(x)])
    g = apply_pass(Graph(out._outputs), "infer_storage_type")
    idx = g.indexed
    by_op = {n.op.name: i for i, n in enumerate(idx.nodes) if not n.is_variable}
    modes, stypes = g.attrs["dispatch_mode"], g.attrs["storage_type"]
    assert modes[by_op["dot"]] == "fcompute_ex" and stypes[idx.entry_id(by_op["dot"], 0)] == "default"
    assert modes[by_op["exp"]] == "fallback" and stypes[idx.entry_id(by_op["exp"], 0)] == "default"
    assert modes[by_op["relu"]] == "fcompute"
    assert modes[by_op["abs"]] == "fcompute_ex" and stypes[idx.entry_id(by_op["abs"], 0)] == "csr"
    assert g.attrs["storage_type_num_fallbacks"] == 1
    g2 = apply_pass(Graph(out._outputs), "infer_storage_type",
                    storage_inputs={"x": "default", "w": "default"})
    assert g2.attrs["storage_type_num_fallbacks"] == 0
    with pytest.raises(mx.MXNetError, match="unknown stype"):
        apply_pass(Graph(out._outputs), "infer_storage_type", storage_inputs={"x": "coo"})


@pytest.mark.parametrize("wstype", ["row_sparse", "default"])
def test_simple_bind_sparse_gradient_equals_the_dense_graphs(wstype):
    """The row_sparse weight gradient of the sparse graph holds the dense graph's nonzero rows."""
    rng = np.random.default_rng(0)
    k = 30
    d = _batch(rng, 8, k)
    w = rng.standard_normal((k, 1)).astype(np.float32) * 0.1
    results = {}
    for sparse in (True, False):
        sym = _logreg(k)
        stypes = {"data": "csr", "weight": wstype} if sparse else {"data": "default", "weight": "default"}
        ex = sym.simple_bind(mx.cpu(), data=(8, k), softmax_label=(8, 1), stype_dict=stypes,
                             grad_req={"weight": "write", "bias": "write"})
        assert ex.arg_dict["data"].stype == stypes["data"]
        mx.nd.array(d).copyto(ex.arg_dict["data"])
        mx.nd.array(w).copyto(ex.arg_dict["weight"])
        ex.arg_dict["softmax_label"][:] = mx.nd.array((rng.random((8, 1)) > 0.5).astype(np.float32)) \
            if not results else results["label"]
        results.setdefault("label", ex.arg_dict["softmax_label"].copy())
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward()
        results[sparse] = (out, ex.grad_dict["weight"], ex.grad_dict["bias"].asnumpy())
    (o_s, g_s, b_s), (o_d, g_d, b_d) = results[True], results[False]
    np.testing.assert_allclose(o_s, o_d, rtol=1e-6)
    np.testing.assert_allclose(b_s, b_d, rtol=1e-5)
    assert g_s.stype == "row_sparse" and g_d.stype == "default"
    used = np.flatnonzero(np.any(d != 0, axis=0))
    assert g_s.indices.asnumpy().tolist() == used.tolist()
    np.testing.assert_allclose(g_s.asnumpy(), g_d.asnumpy(), rtol=1e-5, atol=1e-7)


def test_bind_with_a_dense_gradient_array_for_a_sparse_gradient():
    """A dense gradient array bound where the graph makes a row_sparse one gets its dense value."""
    k = 12
    d = _batch(np.random.default_rng(1), 4, k)
    sym = mx.sym.MakeLoss(mx.sym.sum(mx.sym.sparse.dot(mx.sym.Variable("data", stype="csr"),
                                                       mx.sym.Variable("w"))))
    args = {"data": mx.nd.array(d).tostype("csr"), "w": mx.nd.ones((k, 2))}
    grad = mx.nd.zeros((k, 2))
    ex = sym.bind(mx.cpu(), args, args_grad={"w": grad}, grad_req={"w": "write", "data": "null"})
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(grad.asnumpy(), d.T @ np.ones((4, 2)), rtol=1e-6)


def test_executor_fallback_is_logged_and_correct(caplog):
    storage_dispatch.reset_fallback_log()
    a = _batch(np.random.default_rng(2), 3, 5)
    with caplog.at_level(logging.WARNING, logger="mxref.sparse"):
        sym = mx.sym.exp(mx.sym.Variable("x", stype="csr"))
        ex = sym.bind(mx.cpu(), {"x": mx.nd.array(a).tostype("csr")})
        out = ex.forward()[0].asnumpy()
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    assert sum("operator = exp" in r.getMessage() for r in caplog.records) == 1


def test_module_trains_a_row_sparse_weight_like_the_dense_one():
    """Module + sgd (lazy) on the sparse symbol follows the dense symbol step for step (plain SGD:
    untouched rows have zero gradient either way)."""
    rng = np.random.default_rng(3)
    k, n = 40, 16
    batches = [(_batch(rng, n, k), (rng.random((n, 1)) > 0.5).astype(np.float32)) for _ in range(4)]
    weights = {}
    for sparse in (True, False):
        sym = _logreg(k)
        if not sparse:
            dot = mx.sym.dot(mx.sym.Variable("data"), mx.sym.Variable("weight", shape=(k, 1)))
            sym = mx.sym.LogisticRegressionOutput(
                mx.sym.broadcast_add(dot, mx.sym.Variable("bias", shape=(1,))),
                mx.sym.Variable("softmax_label"), name="out")
        mod = mx.mod.Module(sym, data_names=["data"], label_names=["softmax_label"])
        mod.bind(data_shapes=[("data", (n, k))], label_shapes=[("softmax_label", (n, 1))])
        mod.init_params(mx.init.Constant(0.01))
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
        for d, y in batches:
            data = mx.nd.array(d).tostype("csr") if sparse else mx.nd.array(d)
            mod.forward_backward(mx.io.DataBatch([data], [mx.nd.array(y)]))
            mod.update()
        arg_params = mod.get_params()[0]
        assert arg_params["weight"].stype == ("row_sparse" if sparse else "default")
        weights[sparse] = arg_params["weight"].asnumpy()
    assert np.any(weights[True] != 0.01)
    np.testing.assert_allclose(weights[True], weights[False], rtol=1e-5, atol=1e-7)


def test_hybridized_block_with_a_csr_input():
    """A hybridized block (CachedOp) given a csr batch computes the same output and gradient."""
    from mxref import autograd, gluon

    class Net(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.w = self.params.get("w", shape=(10, 2))

        def hybrid_forward(self, F, x, w):
            return F.sparse.dot(x, w)

    d = _batch(np.random.default_rng(6), 5, 10)
    results = []
    for hybrid in (False, True):
        net = Net()
        net.initialize(mx.init.Constant(0.5))
        if hybrid:
            net.hybridize()
        for _ in range(2):       # the second call runs the cached graph
            with autograd.record():
                y = net(mx.nd.array(d).tostype("csr"))
                loss = (y * y).sum()
            loss.backward()
        results.append((y.asnumpy(), net.w.grad().asnumpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5)
    np.testing.assert_allclose(results[0][0], d @ np.full((10, 2), 0.5), rtol=1e-6)
