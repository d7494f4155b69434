"""Gluon Block/HybridBlock/SymbolBlock: hybridized == imperative (forward and gradients), one
autograd node per hybridized call, parameter files, export -> imports, files from MXNet 1.9.1."""
import os

import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.gluon import nn

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon")


def mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
    return net


def lenet(dropout=0.5):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, kernel_size=3, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(),
                nn.Conv2D(6, kernel_size=2), nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dropout(dropout),
                nn.Dense(10))
    return net


def run(net, x, label, train=True):
    """Forward under record, softmax loss, backward; returns the output and every gradient."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record(train_mode=train):
        out = net(x)
        loss = loss_fn(out, label)
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req != "null"}
    return out.asnumpy(), grads


@pytest.mark.parametrize("build,shape", [(mlp, (4, 5)), (lambda: lenet(0.0), (4, 1, 8, 8))])
def test_hybridized_equals_imperative(build, shape):
    """The executor path gives the imperative outputs and parameter gradients (MLP, LeNet+BatchNorm)."""
    mx.random.seed(0)
    net = build()
    net.initialize(mx.init.Xavier())
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    label = mx.nd.array([0, 1, 2, 1])
    net(x)   # deferred init
    saved = {k: p.data().copy() for k, p in net.collect_params().items()}
    out_imp, grads_imp = run(net, x, label)
    stats_imp = {k: p.data().asnumpy() for k, p in net.collect_params().items() if "running" in k}
    for k, p in net.collect_params().items():
        p.set_data(saved[k])
    net.hybridize()
    out_hyb, grads_hyb = run(net, x, label)
    np.testing.assert_allclose(out_hyb, out_imp, rtol=1e-5, atol=1e-6)
    assert grads_hyb.keys() == grads_imp.keys()
    for k in grads_imp:
        np.testing.assert_allclose(grads_hyb[k], grads_imp[k], rtol=1e-4, atol=1e-6, err_msg=k)
    for k, v in stats_imp.items():   # BatchNorm's running statistics move the same way
        np.testing.assert_allclose(net.collect_params()[k].data().asnumpy(), v, rtol=1e-5, atol=1e-7)


def test_inference_mode_dropout_and_batchnorm():
    """Outside record, Dropout is the identity and BatchNorm uses running stats, in both modes."""
    net = lenet(0.5)
    net.initialize()
    x = mx.nd.random.uniform(shape=(2, 1, 8, 8))
    imp = net(x).asnumpy()
    net.hybridize(static_alloc=True, static_shape=True)
    np.testing.assert_allclose(net(x).asnumpy(), imp, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(net(x).asnumpy(), imp, rtol=1e-5, atol=1e-7)
    stats = net[1].running_mean.data().asnumpy()
    np.testing.assert_array_equal(stats, np.zeros_like(stats))


def test_hybridized_call_records_one_node():
    """Under record a hybridized call is one graph node (autograd.get_symbol shows one op)."""
    net = mlp()
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((2, 4))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    ops = [n for n in autograd.get_symbol(y).get_internals().list_outputs() if not n.startswith("var")]
    assert len(ops) == 1
    y.backward()
    # the input's gradient flows out of the executor too
    net.hybridize(False)
    x2 = mx.nd.ones((2, 4))
    x2.attach_grad()
    with autograd.record():
        y2 = net(x2)
    y2.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), x2.grad.asnumpy(), rtol=1e-5, atol=1e-7)


def test_two_recorded_calls_before_backward():
    """Two hybridized calls recorded before one backward each keep their own values (two executors)."""
    net = nn.Dense(3, in_units=2)
    net.initialize(mx.init.One())
    net.hybridize()
    a, b = mx.nd.array([[1, 2]]), mx.nd.array([[3, 5]])
    with autograd.record():
        y = net(a) * net(b)
    y.backward()
    grad_hyb = net.weight.grad().asnumpy()
    net.hybridize(False)
    with autograd.record():
        y = net(a) * net(b)
    y.backward()
    np.testing.assert_allclose(grad_hyb, net.weight.grad().asnumpy(), rtol=1e-6)


def test_new_input_shape_binds_new_executor():
    """Each input signature gets its own executor; results stay right when shapes change."""
    net = mlp()
    net.initialize()
    net.hybridize()
    for n in (2, 5, 2):
        x = mx.nd.random.uniform(shape=(n, 4))
        net.hybridize(False)
        ref = net(x).asnumpy()
        net._active = True
        np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-5, atol=1e-7)


def test_block_children_collect_params_and_hooks():
    """Attributes register children; collect_params filters by regex; hooks run around forward."""
    class Net(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.body = nn.Dense(2)
                self.head = nn.Dense(1)

        def forward(self, x):
            return self.head(self.body(x))

    with mx.name.NameManager():
        net = Net()
    assert list(net._children) == ["body", "head"]
    assert list(net.collect_params(".*weight").keys()) == ["net0_dense0_weight", "net0_dense1_weight"]
    net.initialize()
    seen = []
    handle = net.register_forward_hook(lambda blk, args, out: seen.append(out.shape))
    net.register_forward_pre_hook(lambda blk, args: seen.append(args[0].shape))
    net(mx.nd.ones((3, 4)))
    assert seen == [(3, 4), (3, 1)]
    handle.detach()
    net(mx.nd.ones((3, 4)))
    assert seen == [(3, 4), (3, 1), (3, 4)]
    with pytest.raises(ValueError, match="Children of HybridBlock must also be HybridBlock"):
        nn.HybridSequential().add(net)


def test_save_load_parameters_roundtrip(tmp_path):
    """save_parameters writes structural names; load_parameters restores into a fresh net."""
    net = mlp()
    net.initialize()
    x = mx.nd.random.uniform(shape=(2, 5))
    y = net(x).asnumpy()
    fname = str(tmp_path / "mlp.params")
    net.save_parameters(fname)
    assert sorted(mx.nd.load(fname)) == ["0.bias", "0.weight", "1.bias", "1.weight"]
    net2 = mlp()
    net2.load_parameters(fname)
    np.testing.assert_allclose(net2(x).asnumpy(), y, rtol=1e-6)
    extra = nn.HybridSequential()
    with extra.name_scope():
        extra.add(nn.Dense(8), nn.Dense(3), nn.Dense(1))
    with pytest.raises(AssertionError, match="'2.weight' is missing"):
        extra.load_parameters(fname)
    small = nn.HybridSequential()
    small.add(nn.Dense(8))
    with pytest.raises(AssertionError, match="'1[.](weight|bias)' loaded from file .* is not present"):
        small.load_parameters(fname)


def test_load_parameters_written_by_mxnet():
    """A .params file from MXNet 1.9.1's save_parameters loads and gives MXNet's output."""
    io = np.load(os.path.join(FIXTURES, "mlp_mxnet191_io.npz"))
    net = mlp()
    net.load_parameters(os.path.join(FIXTURES, "mlp_mxnet191.params"))
    np.testing.assert_allclose(net(mx.nd.array(io["x"])).asnumpy(), io["y"], rtol=1e-5, atol=1e-6)


def test_export_and_symbolblock_imports(tmp_path):
    """export writes MXNet's files; SymbolBlock.imports reads them back to the same outputs."""
    net = lenet()
    net.initialize(mx.init.Xavier())
    x = mx.nd.random.uniform(shape=(2, 1, 8, 8))
    with pytest.raises(RuntimeError, match="call block.hybridize"):
        net.export(str(tmp_path / "none"))
    net.hybridize()
    with autograd.record():          # a training pass, so the BatchNorm statistics are not trivial
        net(x)
    y = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / "lenet"), epoch=7)
    assert params_file.endswith("lenet-0007.params")
    saved = mx.nd.load(params_file)
    assert "aux:" + net[1].running_mean.name in saved
    assert "arg:" + net[0].weight.name in saved and len(saved) == 10
    net2 = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(net2(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
    assert net2.collect_params()[net[1].running_var.name].grad_req == "null"


def test_imports_file_exported_by_mxnet():
    """A LeNet exported (after training steps) by MXNet 1.9.1 imports and gives MXNet's outputs."""
    io = np.load(os.path.join(FIXTURES, "lenet_mxnet191_io.npz"))
    net = gluon.SymbolBlock.imports(os.path.join(FIXTURES, "lenet_mxnet191-symbol.json"), "data",
                                    os.path.join(FIXTURES, "lenet_mxnet191-0003.params"))
    np.testing.assert_allclose(net(mx.nd.array(io["x"])).asnumpy(), io["y"], rtol=1e-4, atol=1e-5)


def test_symbolblock_from_symbols_trains():
    """A SymbolBlock built from mx.sym learns its parameter shapes and takes gradients."""
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=4, name="fc1"),
                                                  act_type="tanh"), num_hidden=2, name="fc2")
    net = gluon.SymbolBlock(out, data)
    assert sorted(net.collect_params().keys()) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    net.initialize()
    x = mx.nd.ones((3, 5))
    with autograd.record():
        y = net(x)
    y.backward()
    assert net.collect_params()["fc1_weight"].shape == (4, 5)
    assert np.abs(net.collect_params()["fc1_weight"].grad().asnumpy()).sum() > 0


def test_hybrid_block_inside_plain_block_and_symbol_call():
    """A HybridBlock works as a child of a Block, and traces when called on a Symbol."""
    net = mlp()
    net.initialize()
    out = net(mx.sym.var("data"))
    assert out.list_arguments()[:2] == ["data", net[0].weight.name]
    assert out.name == net[1].prefix + "fwd"


def test_cast_and_reset_ctx_rebind():
    """cast and reset_ctx are picked up by a hybridized block (the executor is rebound)."""
    net = mlp()
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((2, 4))
    y = net(x).asnumpy()
    net.cast("float64")
    y64 = net(x.astype("float64"))
    assert y64.dtype == np.float64
    np.testing.assert_allclose(y64.asnumpy(), y, rtol=1e-5)
    net.cast("float32")
    net.collect_params().reset_ctx(mx.cpu(1))
    y1 = net(x.as_in_context(mx.cpu(1)))
    assert y1.context == mx.cpu(1)
    np.testing.assert_allclose(y1.asnumpy(), y, rtol=1e-5)


def test_summary(capsys):
    """summary prints MXNet's table: one row per layer, output shapes, parameter totals."""
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    net.initialize()
    net.summary(mx.nd.ones((2, 5)))
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].split() == ["Input", "(2,", "5)", "0"]
    assert [ln.split()[0] for ln in lines[4:8]] == ["Activation-1", "Dense-2", "BatchNorm-3", "Dense-4"]
    assert lines[7].split()[-1] == "27"
    assert "   Total params: 107" in lines and "   Trainable params: 91" in lines
    assert "   Non-trainable params: 16" in lines
    net.hybridize()
    with pytest.raises(AssertionError, match="must not be hybridized"):
        net.summary(mx.nd.ones((2, 5)))


def test_executor_cache_is_bounded():
    """Ever-changing input shapes do not keep an executor per shape forever."""
    from mxref.gluon import hybrid_block
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    for n in range(1, hybrid_block._MAX_SIGNATURES + 6):
        assert net(mx.nd.ones((n, 3))).shape == (n, 2)
    assert len(net._cached_execs) <= hybrid_block._MAX_SIGNATURES


def test_legacy_save_params_round_trip_through_a_symbol_block(tmp_path):
    """save_params (deprecated) writes full names minus the prefix; load_params and a SymbolBlock
    built from the exported graph read them back (MXNet 1.9.1's test_legacy_save_params)."""
    net = mx.gluon.nn.HybridSequential(prefix="")
    with net.name_scope():
        net.add(mx.gluon.nn.Conv2D(4, (3, 3)))
        net.add(mx.gluon.nn.Dense(5))
    net.initialize()
    x = mx.nd.ones((1, 1, 8, 8))
    want = net(x).asnumpy()
    path = str(tmp_path / "legacy.params")
    with pytest.warns(DeprecationWarning, match="save_params is deprecated"):
        net.save_params(path)
    assert all("." not in k for k in mx.nd.load(path))
    model = mx.gluon.nn.SymbolBlock(outputs=net(mx.sym.var("data")), inputs=mx.sym.var("data"))
    with pytest.warns(DeprecationWarning):
        model.load_params(path, ctx=mx.cpu())
    np.testing.assert_allclose(model(x).asnumpy(), want, rtol=1e-6)


def test_block_scope_keeps_an_object_it_was_made_for():
    """``with _BlockScope(obj)`` may be the object's only owner (MXNet's thread-local test does
    this): names inside take its prefix; a Block's own scope still holds the block weakly."""
    import threading
    import weakref

    from mxref.gluon.block import _BlockScope

    class Holder:
        def __init__(self, prefix):
            self.prefix, self._empty_prefix = prefix, False

    seen = []

    def spawned():
        with _BlockScope(Holder("spawned_")):
            seen.append(mx.name.current().get(None, "hello"))

    t = threading.Thread(target=spawned)
    t.start()
    t.join(timeout=60)
    assert seen == ["spawned_hello0"]
    net = mx.gluon.nn.Dense(2)
    ref = weakref.ref(net)
    del net
    assert ref() is None                   # freed at once: no block <-> scope cycle
