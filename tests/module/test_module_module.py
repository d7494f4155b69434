"""mx.mod.Module: steps match MXNet 1.9.1, fit/score/predict, parameters, checkpoints, errors."""
import os
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref.io import DataBatch, NDArrayIter
from mxref.model import BatchEndParam, load_params
from mxref.module import Module

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "module")
PREFIX = os.path.join(FIXTURES, "mxnet_bn_mlp")


def mlp(hidden=16, classes=3):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1"), act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=classes, name="fc2"), name="softmax")


def toy_data(n=60, dim=4, seed=0):
    """Three well separated blobs: a small MLP learns them in a few epochs."""
    rng = np.random.RandomState(seed)
    label = rng.randint(0, 3, n)
    centers = np.eye(3, dim) * 3
    return (centers[label] + rng.normal(0, 0.3, (n, dim))).astype(np.float32), label.astype(np.float32)


def batch(x, y):
    return DataBatch([mx.nd.array(x)], [mx.nd.array(y)])


def test_two_sgd_steps_match_mxnet():
    """Module.load + bind + SGD(momentum, wd) steps give MXNet 1.9.1's weights, BatchNorm stats, outputs."""
    ref = np.load(os.path.join(FIXTURES, "module_mxnet191.npz"))
    mod = Module.load(PREFIX, 0)
    mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01})
    for i in range(2):
        mod.forward(batch(ref[f"x{i}"], ref[f"y{i}"]), is_train=True)
        mod.backward()
        mod.update()
    want_arg, want_aux = load_params(PREFIX, 2)
    arg, aux = mod.get_params()
    assert sorted(arg) == sorted(want_arg) and sorted(aux) == sorted(want_aux) == ["bn1_moving_mean",
                                                                                   "bn1_moving_var"]
    for got, want in ((arg, want_arg), (aux, want_aux)):
        for name in want:
            np.testing.assert_allclose(got[name].asnumpy(), want[name].asnumpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=name)
    mod.forward(batch(ref["x0"], ref["y0"]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), ref["pred"], rtol=1e-5, atol=1e-6)


def test_init_optimizer_rescales_by_batch_and_names_indices():
    """rescale_grad = 1/batch_size; updater indices map to parameter names (item 10)."""
    mod = Module(mlp())
    mod.bind(data_shapes=[("data", (20, 4))], label_shapes=[("softmax_label", (20,))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    assert mod._optimizer.rescale_grad == pytest.approx(1 / 20)
    assert mod._optimizer.idx2name == {0: "fc1_weight", 1: "fc1_bias", 2: "fc2_weight", 3: "fc2_bias"}
    # Two devices without a store: index i * 2 + k is parameter i on device k; biases get no decay.
    two = Module(mlp(), context=[mx.cpu(0), mx.cpu(1)])
    two.bind(data_shapes=[("data", (20, 4))], label_shapes=[("softmax_label", (20,))])
    two.init_params()
    two.init_optimizer(kvstore=None, optimizer_params={"learning_rate": 0.1, "wd": 0.5})
    assert two._optimizer.idx2name[3] == "fc1_bias" and two._optimizer.idx2name[4] == "fc2_weight"
    assert [two._optimizer._get_wd(i) for i in range(8)] == [0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0]


def test_default_initializer_is_uniform_001():
    """init_params() uses Uniform(0.01) for weights; biases start at zero (item 5)."""
    mx.random.seed(3)
    mod = Module(mlp(hidden=64))
    mod.bind(data_shapes=[("data", (5, 32))], label_shapes=[("softmax_label", (5,))])
    mod.init_params()
    arg, _ = mod.get_params()
    w = arg["fc1_weight"].asnumpy()
    assert np.abs(w).max() <= 0.01 and w.std() > 0.004
    assert not arg["fc1_bias"].asnumpy().any()


def test_fit_learns_and_calls_callbacks():
    """fit trains to high accuracy; batch-end, epoch-end and eval-end callbacks get MXNet's arguments."""
    x, y = toy_data()
    train = NDArrayIter(x, y, batch_size=20, shuffle=True)
    val = NDArrayIter(x, y, batch_size=20)
    seen = {"batch": [], "epoch": [], "eval": []}
    mx.random.seed(0)
    np.random.seed(0)
    mod = Module(mlp())
    mod.fit(train, eval_data=val, num_epoch=8, optimizer_params={"learning_rate": 0.5, "momentum": 0.9},
            initializer=mx.init.Xavier(),
            batch_end_callback=lambda p: seen["batch"].append((p.epoch, p.nbatch)),
            epoch_end_callback=lambda e, s, a, x_: seen["epoch"].append((e, s is mod.symbol, sorted(a))),
            eval_end_callback=lambda p: seen["eval"].append(isinstance(p, BatchEndParam)))
    assert seen["batch"][:4] == [(0, 0), (0, 1), (0, 2), (1, 0)] and len(seen["batch"]) == 24
    assert seen["epoch"][-1] == (7, True, ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"])
    assert seen["eval"] == [True] * 8
    assert dict(mod.score(val, "acc"))["accuracy"] > 0.95


def test_predict_merges_batches_and_drops_padding():
    """predict joins batches and cuts the pad; iter_predict yields (outputs, index, batch)."""
    x, y = toy_data(n=50)
    it = NDArrayIter(x, y, batch_size=20)            # 3 batches, the last padded by 10
    mod = Module(mlp())
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label, for_training=False)
    mod.init_params(initializer=mx.init.Xavier())
    out = mod.predict(it)
    assert out.shape == (50, 3)
    assert isinstance(mod.predict(it, always_output_list=True), list)
    per_batch = mod.predict(it, merge_batches=False)
    assert [o[0].shape for o in per_batch] == [(20, 3), (20, 3), (10, 3)]
    np.testing.assert_allclose(np.concatenate([o[0].asnumpy() for o in per_batch]), out.asnumpy())
    assert [i for _, i, _ in mod.iter_predict(it, num_batch=2)] == [0, 1]
    # One array is run as one batch, re-binding for its shape.
    np.testing.assert_allclose(mod.predict(x[:7]).asnumpy(), out.asnumpy()[:7], rtol=1e-6)


def test_params_roundtrip_and_checkpoint_with_optimizer_states(tmp_path):
    """save_checkpoint(save_optimizer_states) + Module.load resumes exactly where training stopped."""
    x, y = toy_data(n=20)
    mods = []
    for _ in range(2):
        mod = Module(mlp())
        mod.bind(data_shapes=[("data", (20, 4))], label_shapes=[("softmax_label", (20,))])
        mods.append(mod)
    a, b = mods
    a.init_params(initializer=mx.init.Xavier())
    opt = {"learning_rate": 0.2, "momentum": 0.9}
    a.init_optimizer(optimizer_params=opt)
    a.forward_backward(batch(x, y))
    a.update()
    prefix = str(tmp_path / "toy")
    a.save_checkpoint(prefix, 1, save_optimizer_states=True)
    assert os.path.exists(prefix + "-0001.states")
    b = Module.load(prefix, 1, load_optimizer_states=True)
    b.bind(data_shapes=[("data", (20, 4))], label_shapes=[("softmax_label", (20,))])
    b.init_optimizer(optimizer_params=opt)
    for mod in (a, b):
        mod.forward_backward(batch(x, y))
        mod.update()
    for name, value in a.get_params()[0].items():
        np.testing.assert_allclose(b.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-6)
    # set_params / save_params / load_params
    fname = str(tmp_path / "p.params")
    a.save_params(fname)
    b.set_params({k: mx.nd.zeros(v.shape) for k, v in a.get_params()[0].items()}, {})
    assert not b.get_params()[0]["fc1_weight"].asnumpy().any()
    b.load_params(fname)
    np.testing.assert_array_equal(b.get_params()[0]["fc1_weight"].asnumpy(),
                                  a.get_params()[0]["fc1_weight"].asnumpy())


def test_fixed_params_and_input_grads():
    """fixed_param_names are never updated; inputs_need_grad gives data gradients."""
    x, y = toy_data(n=10)
    mod = Module(mlp(), fixed_param_names=["fc1_weight"])
    mod.bind(data_shapes=[("data", (10, 4))], label_shapes=[("softmax_label", (10,))], inputs_need_grad=True)
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    before = {k: v.asnumpy().copy() for k, v in mod.get_params()[0].items()}
    mod.forward_backward(batch(x, y))
    mod.update()
    after = mod.get_params()[0]
    np.testing.assert_array_equal(after["fc1_weight"].asnumpy(), before["fc1_weight"])
    assert not np.array_equal(after["fc2_weight"].asnumpy(), before["fc2_weight"])
    grads = mod.get_input_grads()
    assert grads[0].shape == (10, 4) and np.abs(grads[0].asnumpy()).sum() > 0
    assert mod.output_shapes == [("softmax_output", (10, 3))]


def test_errors_name_the_problem():
    """Misuse raises with a message saying what is wrong."""
    with pytest.raises(ValueError, match="dta"):
        Module(mlp(), data_names=["dta"])
    mod = Module(mlp())
    with pytest.raises(mx.MXNetError, match="bind"):
        mod.forward(batch(np.zeros((2, 4)), np.zeros(2)))
    with pytest.raises(ValueError, match="number of epochs"):
        mod.fit(NDArrayIter(np.zeros((4, 4)), np.zeros(4), batch_size=2))
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(ValueError, match="don't match"):
        Module(mlp()).bind(data_shapes=[("x", (2, 4))])
    mod.init_params()
    with pytest.raises(mx.MXNetError, match="init_optimizer"):
        mod.update()
    with pytest.raises(RuntimeError, match="fc1_bias is not presented"):
        mod.init_params(arg_params={"fc1_weight": mx.nd.zeros((16, 4))}, force_init=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod.init_params()
    assert any("already initialized" in str(w.message) for w in caught)


def test_fit_resumes_from_begin_epoch_with_given_params():
    """fit(begin_epoch=2, num_epoch=4, arg_params=...) runs epochs 2 and 3 starting from those values."""
    x, y = toy_data(n=20)
    it = NDArrayIter(x, y, batch_size=10)
    start = Module(mlp())
    start.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    start.init_params(initializer=mx.init.Xavier())
    arg, aux = start.get_params()
    epochs = []
    mod = Module(mlp())
    mod.fit(it, num_epoch=4, begin_epoch=2, arg_params=arg, aux_params=aux,
            optimizer_params={"learning_rate": 0.0}, epoch_end_callback=lambda e, *_: epochs.append(e))
    assert epochs == [2, 3]
    for name, value in arg.items():       # learning rate 0: the given values are kept exactly
        np.testing.assert_array_equal(mod.get_params()[0][name].asnumpy(), value.asnumpy())


def test_forward_with_a_batch_that_has_no_label_field():
    """Any object with ``.data`` is a batch (MXNet's ``namedtuple('Batch', ['data'])``); a new
    shape re-binds."""
    from collections import namedtuple
    Batch = namedtuple("Batch", ["data"])
    mod = Module(mx.sym.Variable("data") * 2, label_names=None)
    mod.bind(data_shapes=[("data", (1, 10))])
    mod.init_params()
    mod.forward(Batch([mx.nd.ones((1, 10))]))
    assert mod.get_outputs()[0].shape == (1, 10)
    mod.forward(Batch([mx.nd.ones((3, 5))]))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((3, 5), 2, np.float32))
