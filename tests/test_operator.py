"""Custom operators (mx.operator): registration, mx.nd.Custom with autograd, mx.sym.Custom in
executors, shape/type inference by the prop, string kwargs, aux states, errors, and the inline
engine scope that keeps Python code inside an engine op from deadlocking."""
import json
import pathlib
import threading

import numpy as np
import pytest

import mxref as mx
from mxref import engine
from mxref import operator as op_mod  # noqa: F401 - registers Custom (mx.operator)
from mxref.base import MXNetError
from mxref.engine.base import inline_scope

pytestmark = pytest.mark.timeout(60)


class Softmax(mx.operator.CustomOp):
    """MXNet's classic example: softmax forward, (p - onehot(label)) backward, through numpy."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().ravel().astype(np.int64)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))
        self.assign(in_grad[1], req[1], 0)


@mx.operator.register("test_softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


class Scale(mx.operator.CustomOp):
    """y = scale * x with NDArray arithmetic only (no numpy), and a call counter in an aux state."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * self.scale)
        self.assign(out_data[1], req[1], mx.nd.sum(in_data[0]))
        aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        g = mx.nd.broadcast_add(out_grad[0] * self.scale, out_grad[1].reshape((1, 1)))
        self.assign(in_grad[0], req[0], g)


@mx.operator.register("test_scale")
class ScaleProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1.0"):
        super().__init__()
        assert isinstance(scale, str), "kwargs reach the prop as strings"
        self.scale = float(scale)

    def list_outputs(self):
        return ["scaled", "total"]

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], (1,)], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        return Scale(self.scale)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(params=["NaiveEngine", "threaded-1-worker", "ThreadedEnginePerDevice"])
def any_engine(request, monkeypatch):
    """Each engine; 'threaded-1-worker' has one CPU worker, where blocking it would deadlock."""
    old = engine.get().name
    if request.param == "threaded-1-worker":
        monkeypatch.setenv("MXNET_CPU_WORKER_NTHREADS", "1")
        engine.set_engine("ThreadedEnginePerDevice")
    else:
        engine.set_engine(request.param)
    yield request.param
    try:
        engine.get().wait_for_all()
    except MXNetError:
        pass
    monkeypatch.delenv("MXNET_CPU_WORKER_NTHREADS", raising=False)
    engine.set_engine(old)


def test_nd_custom_forward_and_autograd_backward(any_engine):
    """mx.nd.Custom runs the numpy-based softmax; autograd's backward gives p - onehot(label)."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 5)).astype(np.float32)
    label = np.array([0, 3, 1, 4], np.float32)
    x, lab = mx.nd.array(x_np), mx.nd.array(label)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, lab, op_type="test_softmax")
    y.backward()
    p = _softmax(x_np)
    np.testing.assert_allclose(y.asnumpy(), p, rtol=1e-5, atol=1e-6)
    expect = p.copy()
    expect[np.arange(4), label.astype(int)] -= 1
    np.testing.assert_allclose(x.grad.asnumpy(), expect, rtol=1e-5, atol=1e-6)


def test_sym_custom_in_executor_is_a_loss_layer(any_engine):
    """mx.sym.Custom binds like any op: label shape inferred by the prop, backward() needs no head
    gradient (need_top_grad=False), and grad_req='add' reaches the user's assign as req 'add'."""
    data, label = mx.sym.var("data"), mx.sym.var("label")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.Custom(data=fc, label=label, op_type="test_softmax", name="sm")
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias", "label"]
    arg_shapes, out_shapes, _ = net.infer_shape(data=(2, 4))
    assert arg_shapes[-1] == (2,) and out_shapes == [(2, 3)]
    ex = net.simple_bind(mx.cpu(), data=(2, 4), grad_req={"data": "null", "fc_weight": "add",
                                                          "fc_bias": "add", "label": "null"})
    rng = np.random.default_rng(1)
    vals = {"data": rng.standard_normal((2, 4)), "fc_weight": rng.standard_normal((3, 4)),
            "fc_bias": rng.standard_normal(3), "label": np.array([2, 0])}
    for k, v in vals.items():
        ex.arg_dict[k][:] = v.astype(np.float32)
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward()
    z = vals["data"] @ vals["fc_weight"].T + vals["fc_bias"]
    p = _softmax(z)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), p, rtol=1e-4, atol=1e-5)
    dz = p.copy()
    dz[[0, 1], [2, 0]] -= 1
    np.testing.assert_allclose(ex.grad_dict["fc_bias"].asnumpy(), 2 * dz.sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), 2 * dz.T @ vals["data"],
                               rtol=1e-4, atol=1e-5)


def test_json_round_trip_keeps_op_type_and_kwargs():
    """The Custom node's attributes (op_type and the prop's kwargs) survive tojson/load_json."""
    net = mx.sym.Custom(mx.sym.var("x"), op_type="test_scale", scale=2.5, name="sc")
    again = mx.sym.load_json(net.tojson())
    assert again.attr_dict()["sc"] == {"op_type": "test_scale", "scale": "2.5"}
    assert again.list_outputs() == ["sc_scaled", "sc_total"]
    assert again.list_auxiliary_states() == ["sc_count"]


def test_multiple_outputs_aux_states_and_string_kwargs(any_engine):
    """Two outputs, an aux state the forward mutates, NDArray-only user code, gradient of both."""
    x_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, count = mx.nd.array(x_np), mx.nd.zeros((1,))
    x.attach_grad()
    with mx.autograd.record():
        y, total = mx.nd.Custom(x, count, op_type="test_scale", scale=3)
        loss = mx.nd.sum(y) + 2 * total
    loss.backward()
    np.testing.assert_array_equal(y.asnumpy(), 3 * x_np)
    assert total.asnumpy().tolist() == [15.0]
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 3), 3 + 2, np.float32))
    mx.nd.Custom(data=x, count=count, op_type="test_scale")     # inputs by name
    assert count.asnumpy().tolist() == [2.0]


def test_symbol_with_aux_state_in_executor(any_engine):
    """In an executor the aux state is bound in aux_dict and updated by each forward."""
    net = mx.sym.Custom(mx.sym.var("x"), op_type="test_scale", scale="0.5", name="sc")
    ex = net.simple_bind(mx.cpu(), x=(4,))
    ex.arg_dict["x"][:] = np.arange(4, dtype=np.float32)
    for _ in range(3):
        ex.forward(is_train=False)
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [0, 0.5, 1, 1.5])
    assert ex.aux_dict["sc_count"].asnumpy().tolist() == [3.0]


class _Caster(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0].astype("float64") + 0.5)


@mx.operator.register("test_caster")
class _CasterProp(mx.operator.CustomOpProp):
    def infer_type(self, in_type):
        return in_type, [np.float64], []

    def create_operator(self, ctx, shapes, dtypes):
        assert dtypes == [4] and shapes == [[3]]     # MXNet's dtype code of int32
        return _Caster()


def test_prop_infers_output_dtype():
    """infer_type gets numpy types and may give outputs another dtype than the inputs."""
    y = mx.nd.Custom(mx.nd.array([1, 2, 3], dtype="int32"), op_type="test_caster")
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.asnumpy(), [1.5, 2.5, 3.5])
    _, out_types, _ = mx.sym.Custom(mx.sym.var("a"), op_type="test_caster").infer_type(a="int32")
    assert out_types == [np.float64]


class _Nested(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        inner = mx.nd.Custom(in_data[0], mx.nd.zeros((1,)), op_type="test_scale", scale=2)[0]
        self.assign(out_data[0], req[0], inner + float(inner.asnumpy().sum()))


@mx.operator.register("test_nested")
class _NestedProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return []

    def create_operator(self, ctx, shapes, dtypes):
        return _Nested()


def test_custom_op_calling_a_custom_op(any_engine):
    """A forward may call another custom operator: inline scopes nest and unwind."""
    y = mx.nd.Custom(mx.nd.array([1.0, 2.0]), op_type="test_nested")
    np.testing.assert_array_equal(y.asnumpy(), [2 + 6, 4 + 6])
    assert (mx.nd.ones((2,)) * 2).asnumpy().tolist() == [2, 2]   # the engine still schedules normally


class _Broken(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.ones((7,)))    # wrong shape


@mx.operator.register("test_broken")
class _BrokenProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Broken()


def test_errors_name_the_custom_operator(any_engine):
    """Unknown op_type raises at the call; a failure inside forward surfaces at the next wait."""
    with pytest.raises(MXNetError, match="op_type 'no_such_op' is not registered"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="no_such_op")
    with pytest.raises(MXNetError, match="op_type"):
        mx.nd.Custom(mx.nd.ones((2,)))
    y = mx.nd.Custom(mx.nd.ones((3,)), op_type="test_broken")
    with pytest.raises(MXNetError, match=r"Custom \(test_broken\): forward failed"):
        y.asnumpy()
    with pytest.raises(MXNetError, match="unexpected keyword"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="test_scale", bogus=1)
    with pytest.raises(MXNetError, match="CustomOpProp subclass"):
        mx.operator.register("test_bad")(object)


def test_inline_scope_runs_pushes_on_the_calling_thread(any_engine):
    """Inside inline_scope an op pushed by this thread has run when push returns, on this thread,
    and waits are allowed; outside it the threaded engine runs ops on its workers."""
    eng = engine.get()
    var, seen = eng.new_variable(), []
    with inline_scope():
        eng.push_sync(lambda rctx: seen.append(threading.get_ident()), None, (), (var,), name="probe")
        assert seen == [threading.get_ident()]
        eng.wait_for_var(var)
    eng.push_sync(lambda rctx: seen.append(threading.get_ident()), None, (), (var,), name="probe")
    eng.wait_for_var(var)
    assert (seen[1] == threading.get_ident()) == (any_engine == "NaiveEngine")


def test_registry_lists_custom_types():
    """get_all_registered_operators has both built-in operators and registered custom types."""
    names = mx.operator.get_all_registered_operators()
    assert "FullyConnected" in names and "test_softmax" in names


def test_json_matches_mxnet_and_mxnet_json_runs():
    """Our JSON of a Custom node equals MXNet 1.9.1's (attrs on the node and its aux variable, aux
    version 1), and MXNet's file loads, binds and runs here."""
    fixture = pathlib.Path(__file__).parent / "fixtures/operator/custom_scale_mxnet191.json"
    ours = mx.sym.Custom(mx.sym.var("x"), op_type="test_scale", scale=2.5, name="sc")
    assert json.loads(ours.tojson())["nodes"] == json.loads(fixture.read_text())["nodes"]
    net = mx.sym.load(str(fixture))
    ex = net.simple_bind(mx.cpu(), x=(3,))
    ex.arg_dict["x"][:] = np.array([1, 2, 3], np.float32)
    outs = ex.forward()
    assert outs[0].asnumpy().tolist() == [2.5, 5, 7.5] and outs[1].asnumpy().tolist() == [6]


class _Cube(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] ** 3 * in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, w = in_data
        self.assign(in_grad[0], req[0], out_grad[0] * 3 * x ** 2 * w)
        self.assign(in_grad[1], req[1], out_grad[0] * x ** 3)


@mx.operator.register("test_cube")
class _CubeProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["x", "w"]

    def create_operator(self, ctx, shapes, dtypes):
        return _Cube()


def test_numeric_gradient_through_custom_op():
    """The user's backward, inside a larger graph, agrees with central differences."""
    x, w = mx.sym.var("x"), mx.sym.var("w")
    net = mx.sym.tanh(mx.sym.Custom(x, w, op_type="test_cube") * 0.3)
    rng = np.random.default_rng(2)
    mx.test_utils.check_numeric_gradient(
        net, {"x": rng.uniform(-1, 1, (3, 4)), "w": rng.uniform(-1, 1, (3, 4))}, dtype=np.float64)


def test_custom_op_in_a_hybrid_block_imperative_and_hybridized():
    """F.Custom inside hybrid_forward: the same values and gradients before and after hybridize()."""
    from mxref import gluon

    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = gluon.nn.Dense(4, in_units=3)

        def hybrid_forward(self, F, x):
            return F.Custom(self.dense(x), self.dense(x), op_type="test_cube")

    net = Net()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(3).uniform(-1, 1, (2, 3)))
    results = []
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        with mx.autograd.record():
            y = net(x)
        y.backward()
        results.append((y.asnumpy(), net.dense.weight.grad().asnumpy().copy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)


class _Ones(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.ones(out_data[0].shape))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        pass


@mx.operator.register("test_no_input_ones")
class _OnesProp(mx.operator.CustomOpProp):
    def __init__(self, length, depth):
        super().__init__()
        self.shape = (int(length), int(depth))

    def list_arguments(self):
        return []

    def infer_shape(self, in_shape):
        return [], [self.shape], []

    def infer_type(self, in_type):
        return [], [np.float32], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Ones()


def test_custom_op_without_inputs(any_engine):
    """An op with no inputs takes its shape and dtype from the prop alone (also under autograd)."""
    with mx.autograd.record():
        x = mx.nd.Custom(length=3, depth=4, op_type="test_no_input_ones")
    assert x.shape == (3, 4) and x.dtype == np.float32 and (x.asnumpy() == 1).all()
    out = mx.sym.Custom(length=2, depth=2, op_type="test_no_input_ones").bind(mx.cpu(), {}).forward()
    assert out[0].shape == (2, 2)
