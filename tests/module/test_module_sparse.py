"""Module training with a row_sparse weight, as MXNet's sparse examples do it: a csr ``data``
Variable, ``sparse.dot`` with a row_sparse ``weight``, ``update_on_kvstore`` and
``Module.prepare(batch, sparse_row_id_fn)``. The trained weights equal the same SGD in numpy,
each ``prepare`` pulls exactly the batch's rows, and the model learns its tiny problem."""
import numpy as np
import pytest
import sparse_logreg as lr

import mxref as mx


@pytest.mark.timeout(60)
def test_module_sparse_training_equals_numpy_sgd(tmp_path):
    path = tmp_path / "d.libsvm"
    lr.write_data(path)
    w, b, pulled = lr.train_module(path, mx.kv.create("local"))
    ref_w, ref_b = lr.train_numpy(path)
    np.testing.assert_allclose(w[:, 0], ref_w, rtol=1e-4, atol=1e-5)
    assert abs(b - ref_b) < 1e-4
    assert all(got == want for got, want in pulled), pulled[:2]     # only the batch's rows
    assert lr.accuracy(path, w[:, 0], b) > 0.85


def test_prepare_warns_without_a_store_update(tmp_path):
    path = tmp_path / "d.libsvm"
    lr.write_data(path)
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("weight", shape=(lr.FEATURES, 1), stype="row_sparse")
    net = mx.sym.LogisticRegressionOutput(mx.sym.sparse.dot(x, w), mx.sym.Variable("softmax_label"))
    it = lr.batches(path)
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=it.provide_data, label_shapes=[("softmax_label", (lr.BATCH, 1))])
    mod.init_params()
    mod.init_optimizer(kvstore=None)
    with pytest.warns(UserWarning, match="not updated in the KVStore"):
        mod.prepare(next(iter(it)), sparse_row_id_fn=lambda d: {"weight": d.data[0].indices})


@pytest.mark.timeout(60)
@pytest.mark.parametrize("on_kvstore", ["1", "0"])
def test_two_devices_equal_numpy_sgd(tmp_path, monkeypatch, on_kvstore):
    """Two CPU contexts, each half of every batch: with the optimizer in the store (prepare pulls
    rows) or on the devices (the row_sparse gradients summed through a dense key and cast back),
    the weights are the one-device numpy SGD's."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", on_kvstore)
    path = tmp_path / "d.libsvm"
    lr.write_data(path)
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("weight", shape=(lr.FEATURES, 1), stype="row_sparse")
    b = mx.sym.Variable("bias", shape=(1,))
    net = mx.sym.LogisticRegressionOutput(mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b),
                                          mx.sym.reshape(mx.sym.Variable("softmax_label"), shape=(-1, 1)))
    it = lr.batches(path)
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"],
                        context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params={"weight": mx.nd.array(lr.w_init()), "bias": mx.nd.zeros((1,))})
    mod.init_optimizer(optimizer=mx.optimizer.SGD(learning_rate=lr.LR, rescale_grad=1.0 / lr.BATCH),
                       kvstore="local")
    assert mod._update_on_kvstore == (on_kvstore == "1")
    rows = {"weight": lambda d: {"weight": d.data[0].indices}} if on_kvstore == "1" else {}
    for _ in range(lr.EPOCHS):
        it.reset()
        for batch in it:
            mod.prepare(batch, sparse_row_id_fn=rows.get("weight"))
            mod.forward_backward(batch)
            mod.update()
    if on_kvstore == "1":
        mod.prepare(None, sparse_row_id_fn=lambda d: {"weight": mx.nd.arange(0, lr.FEATURES, dtype="int64")})
    args, _ = mod.get_params()
    ref_w, ref_b = lr.train_numpy(path)
    np.testing.assert_allclose(args["weight"].asnumpy()[:, 0], ref_w, rtol=1e-4, atol=1e-5)
    assert abs(float(args["bias"].asnumpy()[0]) - ref_b) < 1e-4


@pytest.mark.timeout(60)
def test_fit_with_sparse_row_id_fn(tmp_path):
    """Module.fit(..., sparse_row_id_fn=) prepares each next batch, as MXNet's fit: it learns."""
    path = tmp_path / "d.libsvm"
    lr.write_data(path)
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("weight", shape=(lr.FEATURES, 1), stype="row_sparse")
    b = mx.sym.Variable("bias", shape=(1,))
    net = mx.sym.LogisticRegressionOutput(mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b),
                                          mx.sym.reshape(mx.sym.Variable("softmax_label"), shape=(-1, 1)))
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"])
    mod.fit(lr.batches(path), kvstore=mx.kv.create("local"), num_epoch=6, optimizer="sgd",
            optimizer_params={"learning_rate": lr.LR}, initializer=mx.init.Normal(0.1),
            sparse_row_id_fn=lambda d: {"weight": d.data[0].indices})
    mod.prepare(None, sparse_row_id_fn=lambda d: {"weight": mx.nd.arange(0, lr.FEATURES, dtype="int64")})
    args, _ = mod.get_params()
    assert lr.accuracy(path, args["weight"].asnumpy()[:, 0], float(args["bias"].asnumpy()[0])) > 0.85
