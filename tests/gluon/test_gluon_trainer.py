"""gluon.Trainer: rescaling by 1/batch_size, multipliers, training progress, states files, and the
KVStore paths (none for one device; 'local'/'device' and a KVStore object for several; update on
the kvstore or locally) giving the same weights as one device."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.gluon import nn


def dense(init=1.0, ctx=None):
    net = nn.Dense(1, in_units=2)
    net.initialize(mx.init.Constant(init), ctx=ctx)
    return net


def backward_sum(net, x):
    with autograd.record():
        y = net(x).sum()
    y.backward()


def test_step_rescales_by_batch_size():
    """step(batch_size) applies rescale_grad = 1/batch_size (semantics item 10)."""
    net = dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    x = mx.nd.array([[1, 2], [3, 4]])
    backward_sum(net, x)          # d(sum)/dW = column sums = [4, 6]; d/db = 2
    trainer.step(4)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[1 - 1.0, 1 - 1.5]], rtol=1e-6)
    np.testing.assert_allclose(net.bias.data().asnumpy(), [0 - 0.5], rtol=1e-6)  # bias init: zeros
    assert trainer.learning_rate == 1.0 and trainer.optimizer.rescale_grad == 0.25
    trainer.set_learning_rate(0.5)
    assert trainer.learning_rate == 0.5


def test_lr_mult_and_wd():
    """Parameter.lr_mult scales the step (0 freezes the bias); wd decays the weight."""
    net = dense()
    net.bias.lr_mult = 0.0
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "wd": 0.5})
    backward_sum(net, mx.nd.array([[1, 1]]))
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[1 - 0.1 * (1 + 0.5)] * 2], rtol=1e-6)
    np.testing.assert_allclose(net.bias.data().asnumpy(), [0.0], rtol=1e-6)


def test_training_decreases_loss():
    """A small MLP trained with Trainer + SoftmaxCrossEntropyLoss fits a separable problem."""
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    X, Y = mx.nd.array(x), mx.nd.array(y)
    losses = []
    for _ in range(30):
        with autograd.record():
            loss = loss_fn(net(X), Y)
        loss.backward()
        trainer.step(64)
        losses.append(loss.mean().asscalar())
    assert losses[-1] < 0.3 * losses[0]
    acc = (net(X).argmax(axis=1).asnumpy() == y).mean()
    assert acc > 0.9


def test_save_and_load_states(tmp_path):
    """load_states restores the momentum: the next step matches an uninterrupted run."""
    def make():
        net = dense(0.5)
        return net, gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})

    x = mx.nd.array([[1, 2]])
    net_a, tr_a = make()
    for _ in range(2):
        backward_sum(net_a, x)
        tr_a.step(1)
    fname = str(tmp_path / "trainer.states")
    tr_a.save_states(fname)
    net_b, tr_b = make()
    for p_a, p_b in zip(net_a.collect_params().values(), net_b.collect_params().values()):
        p_b.set_data(p_a.data())
    tr_b.load_states(fname)
    for net, tr in ((net_a, tr_a), (net_b, tr_b)):
        backward_sum(net, x)
        tr.step(1)
    np.testing.assert_allclose(net_b.weight.data().asnumpy(), net_a.weight.data().asnumpy(), rtol=1e-6)
    assert tr_b.optimizer.param_dict[0] is net_b.bias   # indices follow sorted names


def test_allreduce_grads_then_update_equals_step():
    """allreduce_grads + update(batch_size) is step(batch_size) split in two (room for clipping)."""
    x = mx.nd.array([[1, -2]])
    results = []
    for split in (False, True):
        net = dense()
        tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.3})
        backward_sum(net, x)
        if split:
            tr.allreduce_grads()
            tr.update(2)
        else:
            tr.step(2)
        results.append(net.weight.data().asnumpy())
    np.testing.assert_allclose(results[0], results[1])


def test_errors():
    """Bad params and an Optimizer instance with optimizer_params are refused."""
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        gluon.Trainer("weights", "sgd")
    net = dense()
    with pytest.raises(AssertionError, match="optimizer_params must be None"):
        gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {"learning_rate": 1})
    with pytest.raises(TypeError, match="kvstore must be"):
        gluon.Trainer(net.collect_params(), "sgd", kvstore=3.5).step(1)


def test_single_device_uses_no_kvstore():
    """One device and a local kvstore name: no KVStore is created (as MXNet 1.9.1)."""
    net = dense()
    tr = gluon.Trainer(net.collect_params(), "sgd", kvstore="device")
    backward_sum(net, mx.nd.ones((1, 2)))
    tr.step(1)
    assert tr._kvstore is None and tr._update_on_kvstore is None


@pytest.mark.parametrize("kvstore,update_on_kvstore", [
    ("device", None), ("local", False), ("local", True), ("kvstore-object", None)])
def test_multi_device_matches_single_device(kvstore, update_on_kvstore):
    """Two CPU contexts with a batch split across them end with the one-device weights."""
    x = np.array([[1, 2], [3, -1], [0.5, 2], [-1, 1]], np.float32)
    single = dense(0.3)
    tr1 = gluon.Trainer(single.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.5})
    ctxs = [mx.cpu(0), mx.cpu(1)]
    multi = dense(0.3, ctx=ctxs)
    kv = mx.kv.create("local") if kvstore == "kvstore-object" else kvstore
    tr2 = gluon.Trainer(multi.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.5}, kvstore=kv,
                        update_on_kvstore=update_on_kvstore)
    for _ in range(3):
        backward_sum(single, mx.nd.array(x))
        tr1.step(4)
        parts = gluon.utils.split_and_load(x, ctxs)
        with autograd.record():
            ys = [multi(p).sum() for p in parts]
        autograd.backward(ys)
        tr2.step(4)
    assert tr2._kvstore is not None
    if update_on_kvstore is not None:
        assert tr2._update_on_kvstore == update_on_kvstore
    for ctx in ctxs:
        for name in ("weight", "bias"):
            np.testing.assert_allclose(getattr(multi, name).data(ctx).asnumpy(),
                                       getattr(single, name).data().asnumpy(), rtol=1e-5)


def test_states_round_trip_with_update_on_kvstore(tmp_path):
    """With the optimizer on the KVStore, save_states/load_states go through the KVStore and the
    restored momentum makes the next step match an uninterrupted run."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    x = mx.nd.array([[1, 2]])

    def make(net):
        return gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                             kvstore="local", update_on_kvstore=True)

    def step(net, tr):
        with autograd.record():
            ys = [net(x.as_in_context(c)).sum() for c in ctxs]
        autograd.backward(ys)
        tr.step(2)

    net_a = dense(0.5, ctx=ctxs)
    tr_a = make(net_a)
    step(net_a, tr_a)
    fname = str(tmp_path / "kv.states")
    tr_a.save_states(fname)
    net_b = dense(0.0, ctx=ctxs)
    for p_a, p_b in zip(net_a.collect_params().values(), net_b.collect_params().values()):
        p_b.set_data(p_a.data(ctxs[0]))
    tr_b = make(net_b)
    tr_b.load_states(fname)      # the KVStore takes net_b's weights, then the saved momentum
    step(net_a, tr_a)
    step(net_b, tr_b)
    assert tr_a._update_on_kvstore and tr_b._update_on_kvstore
    for c in ctxs:
        np.testing.assert_allclose(net_b.weight.data(c).asnumpy(), net_a.weight.data(c).asnumpy(), rtol=1e-6)


def test_no_kvstore_updates_each_device_alone():
    """kvstore=None with two devices: no reduction, each copy steps with its own gradient."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = dense(0.0, ctx=ctxs)
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0}, kvstore=None)
    with autograd.record():
        ys = [net(mx.nd.array([[1, 2]], ctx=ctxs[0])).sum(), net(mx.nd.array([[3, 4]], ctx=ctxs[1])).sum()]
    autograd.backward(ys)
    tr.step(1)
    assert tr._kvstore is None
    np.testing.assert_allclose(net.weight.data(ctxs[0]).asnumpy(), [[-1, -2]])
    np.testing.assert_allclose(net.weight.data(ctxs[1]).asnumpy(), [[-3, -4]])


def test_step_follows_replaced_arrays_and_grad_req_changes():
    """The step's list of (gradient, weight) pairs is kept between steps; re-initializing (new
    arrays) or switching a parameter's grad_req to 'null' must still be seen at the next step."""
    net = dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    x = mx.nd.array([[1, 2]])
    backward_sum(net, x)
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[0.0, -1.0]])
    net.collect_params().initialize(mx.init.Constant(5.0), force_reinit=True)    # new arrays
    backward_sum(net, x)
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[4.0, 3.0]])
    net.bias.grad_req = "null"
    bias = net.bias.data().asnumpy().copy()
    backward_sum(net, x)
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[3.0, 1.0]])
    np.testing.assert_array_equal(net.bias.data().asnumpy(), bias)
