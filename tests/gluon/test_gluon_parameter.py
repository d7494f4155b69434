"""Gluon Parameter, Constant and ParameterDict: initialization (deferred too), data/grad access,
grad_req, cast, reset_ctx, save/load, and names compared with MXNet 1.9.1."""
import json
import os
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.gluon import nn, rnn
from mxref.gluon.parameter import DeferredInitializationError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon")


def names_fixture():
    with open(os.path.join(FIXTURES, "gluon_names_mxnet191.json")) as f:
        return json.load(f)


def test_parameter_initialize_data_and_grad():
    """initialize makes the data (with the given initializer) and a zero gradient buffer."""
    p = gluon.Parameter("w", shape=(2, 3), init=mx.init.One())
    p.initialize()
    np.testing.assert_array_equal(p.data().asnumpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(p.grad().asnumpy(), np.zeros((2, 3)))
    assert p.list_ctx() == [mx.cpu()]
    assert len(p.list_data()) == len(p.list_grad()) == 1
    assert repr(p) == "Parameter w (shape=(2, 3), dtype=float32)"


def test_default_init_is_uniform_007():
    """Without any initializer Gluon draws weights from Uniform(0.07) (semantics item 5)."""
    p = gluon.Parameter("fc_weight", shape=(100, 100))
    p.initialize()
    w = p.data().asnumpy()
    assert w.min() >= -0.07 and w.max() <= 0.07 and w.std() > 0.03


def test_initialize_twice_warns_and_force_reinit():
    """A second initialize warns and keeps the values; force_reinit redraws them."""
    p = gluon.Parameter("w", shape=(3,), init=mx.init.Constant(2.0))
    p.initialize()
    with pytest.warns(UserWarning, match="already initialized"):
        p.initialize(init=mx.init.Zero())
    np.testing.assert_array_equal(p.data().asnumpy(), [2, 2, 2])
    p.initialize(init=mx.init.Zero(), force_reinit=True)
    np.testing.assert_array_equal(p.data().asnumpy(), [0, 0, 0])


def test_unknown_shape_errors_and_deferred_init():
    """An unknown dimension raises unless deferred init is allowed; then data() raises until set."""
    with pytest.raises(ValueError, match="invalid shape"):
        gluon.Parameter("w", shape=(2, 0)).initialize()
    p = gluon.Parameter("w", shape=(2, 0), allow_deferred_init=True, init=mx.init.One())
    p.initialize()
    with pytest.raises(DeferredInitializationError, match="deferred"):
        p.data()
    p.shape = (2, 5)
    p._finish_deferred_init()
    assert p.data().shape == (2, 5)
    with pytest.raises(AssertionError, match="incompatible"):
        p.shape = (3, 5)


def test_uninitialized_access_raises():
    """Reading a parameter that was never initialized is a RuntimeError naming it."""
    with pytest.raises(RuntimeError, match="'w' has not been initialized"):
        gluon.Parameter("w", shape=(1,)).data()


def test_set_data_before_deferred_init_and_after():
    """set_data writes every copy; before the deferred init it becomes the initial value."""
    p = gluon.Parameter("w", shape=(0,), allow_deferred_init=True)
    p.initialize()
    p.set_data(mx.nd.array([1, 2, 3]))
    p._finish_deferred_init()
    np.testing.assert_array_equal(p.data().asnumpy(), [1, 2, 3])
    p.set_data(mx.nd.array([4, 5, 6]))
    np.testing.assert_array_equal(p.data().asnumpy(), [4, 5, 6])


def test_grad_req_null_add_and_zero_grad():
    """grad_req='null' drops the gradient; 'add' accumulates until zero_grad."""
    p = gluon.Parameter("w", shape=(2,), init=mx.init.One())
    p.initialize()
    p.grad_req = "add"
    for _ in range(2):
        with autograd.record():
            y = (p.data() * 3).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [6, 6])
    p.zero_grad()
    np.testing.assert_array_equal(p.grad().asnumpy(), [0, 0])
    p.grad_req = "null"
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.grad()
    with pytest.raises(ValueError, match="grad_req must be one of"):
        p.grad_req = "sometimes"


def test_multiple_contexts_and_reset_ctx():
    """A parameter on two contexts holds a copy on each; reset_ctx moves it (mean of the copies)."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    p = gluon.Parameter("w", shape=(2,), init=mx.init.Constant(3))
    p.initialize(ctx=ctxs)
    assert p.list_ctx() == ctxs
    assert p.data(mx.cpu(1)).context == mx.cpu(1)
    with pytest.raises(RuntimeError, match="was not initialized on context"):
        p.data(mx.cpu(2))
    p.reset_ctx(mx.cpu(2))
    assert p.list_ctx() == [mx.cpu(2)]
    np.testing.assert_array_equal(p.data().asnumpy(), [3, 3])


def test_cast_changes_data_and_grad_dtype():
    """cast converts the data and gradient arrays, and gradients still reach the new arrays."""
    p = gluon.Parameter("w", shape=(2,), init=mx.init.One())
    p.initialize()
    p.cast("float64")
    assert p.data().dtype == np.float64 and p.grad().dtype == np.float64
    with autograd.record():
        y = (p.data() * 2).sum()
    y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [2, 2])


def test_var_carries_attributes():
    """Parameter.var() is a symbol variable with the parameter's shape, multipliers and init."""
    p = gluon.Parameter("fc_bias", shape=(4,), init="zeros", lr_mult=2.0)
    attrs = p.var().list_attr()
    assert attrs["__shape__"] == "(4,)" and attrs["__lr_mult__"] == "2.0" and attrs["__init__"] == "zeros"


def test_constant_is_fixed():
    """A Constant holds its value, takes no gradient, and refuses other grad_reqs with a warning."""
    c = gluon.Constant("const", [[1, 2], [3, 4]])
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), [[1, 2], [3, 4]])
    assert c.grad_req == "null"
    with pytest.warns(UserWarning, match="does not support grad_req"):
        c.grad_req = "write"
    assert c.grad_req == "null"


def test_parameter_dict_get_shares_and_checks():
    """ParameterDict.get creates once, fills unknown dims, and refuses conflicting attributes."""
    pd = gluon.ParameterDict("net_")
    a = pd.get("weight", shape=(3, 0))
    assert a.name == "net_weight"
    assert pd.get("weight", shape=(3, 4)) is a and a.shape == (3, 4)
    with pytest.raises(AssertionError, match="desired attribute does not match"):
        pd.get("weight", shape=(5, 4))
    shared = gluon.ParameterDict("net_", shared=pd)
    assert shared.get("weight") is a
    const = pd.get_constant("c", np.ones(2))
    assert isinstance(const, gluon.Constant) and pd.get_constant("c") is const


def test_parameter_dict_select_setattr_initialize(tmp_path):
    """select by regex, setattr on all, initialize all, save/load with prefix stripping."""
    pd = gluon.ParameterDict("m_")
    pd.get("dense_weight", shape=(2, 2))
    pd.get("dense_bias", shape=(2,), init="zeros")
    assert list(pd.select(".*bias").keys()) == ["m_dense_bias"]
    pd.setattr("lr_mult", 0.5)
    assert all(p.lr_mult == 0.5 for p in pd.values())
    pd.initialize(mx.init.One())
    np.testing.assert_array_equal(pd["m_dense_bias"].data().asnumpy(), [0, 0])
    np.testing.assert_array_equal(pd["m_dense_weight"].data().asnumpy(), np.ones((2, 2)))
    fname = str(tmp_path / "p.params")
    pd.save(fname, strip_prefix="m_")
    assert sorted(mx.nd.load(fname)) == ["dense_bias", "dense_weight"]
    other = gluon.ParameterDict("m_")
    other.get("dense_weight", shape=(2, 0), allow_deferred_init=True)
    with pytest.raises(AssertionError, match="'dense_bias' loaded from file .* is not present"):
        other.load(fname, restore_prefix="m_")
    other.get("conv_weight", shape=(1,))
    with pytest.raises(AssertionError, match="'conv_weight' is missing"):
        other.load(fname, restore_prefix="m_", ignore_extra=True)
    other.load(fname, restore_prefix="m_", ignore_extra=True, allow_missing=True)
    np.testing.assert_array_equal(other["m_dense_weight"].data().asnumpy(), np.ones((2, 2)))


def test_names_match_mxnet():
    """Block prefixes and parameter names follow MXNet 1.9.1 (item 2: hybridsequential0_dense0_weight)."""
    expected = names_fixture()

    def names_of(build):
        with mx.name.NameManager():
            return list(build().collect_params().keys())

    def seq(layers):
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(*layers)
        return net

    def mlp():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
        return net

    def lenet():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(4, kernel_size=3, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(),
                    nn.Conv2D(6, kernel_size=2), nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dropout(0.5),
                    nn.Dense(10))
        return net

    class Nested(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.encoder = nn.Dense(4, in_units=3)
                self.norm = nn.LayerNorm(in_channels=4)
                self.act = nn.PReLU()
                self.emb = nn.Embedding(5, 4)

    def seq_cells():
        cell = rnn.SequentialRNNCell()
        with cell.name_scope():
            cell.add(rnn.LSTMCell(3))
            cell.add(rnn.RNNCell(3))
        return cell

    layers = lambda: seq([nn.Dense(2), nn.Conv1D(2, 3), nn.Conv2D(2, 3), nn.Conv3D(2, 3),  # noqa: E731
                          nn.Conv2DTranspose(2, 3), nn.BatchNorm(), nn.LayerNorm(), nn.Embedding(4, 2),
                          nn.PReLU(), nn.Dense(2)])
    assert names_of(mlp) == expected["mlp"]
    assert names_of(lenet) == expected["lenet"]
    assert names_of(Nested) == expected["nested"]
    assert names_of(layers) == expected["layers"]
    assert names_of(lambda: [nn.Dense(2), nn.Dense(2), nn.Conv2D(2, 3)][-1]) == expected["unscoped"]
    assert names_of(lambda: rnn.LSTM(4, num_layers=2, bidirectional=True)) == expected["lstm"]
    assert names_of(lambda: rnn.GRUCell(3)) == expected["gru_cell"]
    assert names_of(seq_cells) == expected["seq_cells"]
    with mx.name.NameManager():
        blocks = [nn.Dense(2), nn.Dense(2), nn.Activation("relu"), nn.MaxPool2D(), nn.Conv2DTranspose(2, 3),
                  nn.HybridSequential(), nn.Sequential(), rnn.LSTM(2), nn.LeakyReLU(0.1)]
    assert [b.prefix for b in blocks] == expected["prefixes"]


def test_deferred_init_through_forward():
    """A Dense without in_units learns its input size on the first forward."""
    net = nn.Dense(3)
    net.initialize(mx.init.One())
    assert net.weight.shape == (3, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = net(mx.nd.ones((2, 5)))
    assert net.weight.shape == (3, 5)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 5.0))


def test_dtype_setter_casts_and_load_takes_the_saved_dtype(tmp_path):
    """Setting ``dtype`` casts the arrays (MXNet's setter calls ``cast``), so loading with
    ``dtype_source='saved'`` into initialized parameters takes the file's dtypes."""
    fname = str(tmp_path / "p.params")
    params0 = gluon.ParameterDict("")
    params0.get("w0", shape=(2, 2), dtype="float32")
    params0.get("w1", shape=(2, 2), dtype="int8")
    params0.initialize(mx.init.One())
    params0.save(fname)
    params1 = gluon.ParameterDict("")
    params1.get("w0", shape=(2, 2), dtype="float16")
    params1.get("w1", shape=(2, 2), dtype="float64")
    params1.load(fname, cast_dtype=True, dtype_source="current")
    assert params1["w0"].data().dtype == np.float16 and params1["w1"].data().dtype == np.float64
    params1.load(fname, cast_dtype=True, dtype_source="saved")
    assert params1["w0"].data().dtype == np.float32 and params1["w1"].data().dtype == np.int8
    p = params1["w0"]
    p.dtype = "float64"
    assert p.dtype == np.float64 and p.data().dtype == np.float64 and p.grad().dtype == np.float64


def test_bad_stype_is_an_assertion_error():
    """An unknown stype or grad_stype fails as MXNet's assert does."""
    with pytest.raises(AssertionError, match="stype"):
        gluon.Parameter("weight", shape=(2, 2), stype="invalid")
    with pytest.raises(AssertionError, match="grad_stype"):
        gluon.Parameter("weight", shape=(2, 2), grad_stype="invalid")
