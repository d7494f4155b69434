"""Executor: bind/simple_bind semantics, forward/backward numbers (MXNet 1.9.1 fixtures), the memory
plan turned into shared arrays and engine variables, and MXNet's ``Total N MB allocated`` line."""
import json
import os

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.symbol.eval_numpy import evaluate

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "executor")
with open(os.path.join(FIXTURES, "executor_mxnet191.json")) as _f:
    CASES = json.load(_f)
ARRAYS = np.load(os.path.join(FIXTURES, "executor_mxnet191.npz"))


@pytest.fixture(params=["NaiveEngine", "ThreadedEnginePerDevice"], autouse=True)
def engine_type(request):
    """Every test runs under both engines: the plan must make the threaded run match the naive one."""
    old = mx.engine.get().name
    mx.engine.set_engine(request.param)
    yield request.param
    mx.engine.set_engine(old)


def mlp(hidden=(6, 5)):
    h = mx.sym.Variable("data")
    for i, n in enumerate(hidden):
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=n, name=f"fc{i + 1}"), act_type="relu",
                              name=f"relu{i + 1}")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc_out"), name="softmax")


def _case(name):
    c = CASES[name]
    return mx.sym.load_json(c["json"]), {k: tuple(v) for k, v in c["shapes"].items()}, c["grad_req"]


def _fill(ex, name):
    for k, a in ex.arg_dict.items():
        a[:] = ARRAYS[f"{name}/arg/{k}"]
    for k, a in ex.aux_dict.items():
        a[:] = ARRAYS[f"{name}/aux/{k}"]


# -- simple_bind / bind ------------------------------------------------------------------------

def test_simple_bind_defaults_write_zero_filled_and_infers_shapes():
    """Default grad_req is 'write' for every argument (data too); arrays start at zero."""
    ex = mlp().simple_bind(mx.cpu(), data=(4, 7))
    assert ex.arg_dict["fc1_weight"].shape == (6, 7)
    assert ex.arg_dict["softmax_label"].shape == (4,)
    assert set(ex.grad_dict) == set(mlp().list_arguments())
    assert all(g is not None and g.shape == ex.arg_dict[k].shape for k, g in ex.grad_dict.items())
    assert all(not a.asnumpy().any() for a in ex.arg_arrays + ex.grad_arrays)
    assert list(ex.output_dict) == ["softmax_output"] and ex.outputs[0].shape == (4, 10)


def test_grad_req_null_gives_none_and_dict_defaults_to_null():
    ex = mlp().simple_bind(mx.cpu(), grad_req={"fc1_weight": "write"}, data=(4, 7))
    assert ex.grad_dict["fc1_weight"] is not None
    assert ex.grad_dict["data"] is None and ex.grad_dict["fc_out_bias"] is None
    ex2 = mlp().simple_bind(mx.cpu(), grad_req="null", data=(4, 7))
    assert ex2.grad_arrays == [None] * len(ex2.arg_arrays)
    with pytest.raises(MXNetError, match="grad_req"):
        mlp().simple_bind(mx.cpu(), grad_req="sometimes", data=(4, 7))


@pytest.mark.parametrize("name", ["mlp_small", "bn_small", "resblock", "concat_slice"])
def test_forward_backward_match_mxnet(name):
    """One training step on fixed inputs gives MXNet 1.9.1's outputs, gradients and aux updates
    (residual sums, BatchNorm statistics, a multi-output split and a two-output group)."""
    sym, shapes, grad_req = _case(name)
    ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
    _fill(ex, name)
    outs = ex.forward(is_train=True)
    heads = None    # loss layers need none; the other cases recorded the ones MXNet was given
    if name in ("bn_small", "concat_slice"):
        heads = [mx.nd.array(ARRAYS[f"{name}/head/{i}"]) for i in range(len(outs))]
    ex.backward(heads)
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out.asnumpy(), ARRAYS[f"{name}/out/{i}"], rtol=1e-5, atol=1e-6)
    for k, g in ex.grad_dict.items():
        if grad_req[k] != "null":
            np.testing.assert_allclose(g.asnumpy(), ARRAYS[f"{name}/grad/{k}"], rtol=1e-4, atol=1e-5,
                                       err_msg=k)
        else:
            assert g is None
    for k, a in ex.aux_dict.items():
        np.testing.assert_allclose(a.asnumpy(), ARRAYS[f"{name}/aux_after/{k}"], rtol=1e-5, atol=1e-6)


def test_bind_uses_the_given_arrays_and_checks_them():
    sym = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, name="fc")
    x, w, b = mx.nd.ones((3, 4)), mx.nd.ones((2, 4)), mx.nd.array([1.0, 2.0])
    gw = mx.nd.zeros((2, 4))
    ex = sym.bind(mx.cpu(), {"x": x, "fc_weight": w, "fc_bias": b}, args_grad={"fc_weight": gw})
    assert ex.arg_dict["x"] is x and ex.grad_dict["fc_weight"] is gw
    assert ex.grad_dict["x"] is None            # no gradient array given: grad_req becomes 'null'
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), [[5, 6]] * 3)
    with pytest.raises(ValueError, match="missing"):
        sym.bind(mx.cpu(), {"x": x, "fc_weight": w})
    with pytest.raises(ValueError, match="Length"):
        sym.bind(mx.cpu(), [x, w])
    with pytest.raises(TypeError):
        sym.bind(mx.cpu(), [x, w, np.ones(2)])
    with pytest.raises(MXNetError, match="fc_weight"):
        sym.bind(mx.cpu(), {"x": x, "fc_weight": mx.nd.ones((3, 4)), "fc_bias": b})


def test_simple_bind_errors_name_the_input():
    with pytest.raises(MXNetError, match="data"):
        mlp().simple_bind(mx.cpu())
    with pytest.raises(MXNetError, match="nonsense"):
        mlp().simple_bind(mx.cpu(), data=(4, 7), nonsense=(1,))


def test_type_dict_float64_runs_in_float64():
    ex = mlp().simple_bind(mx.cpu(), type_dict={"data": np.float64}, data=(4, 7))
    assert ex.arg_dict["fc1_weight"].dtype == np.float64
    assert ex.forward()[0].dtype == np.float64


# -- forward / backward ------------------------------------------------------------------------

def test_forward_kwargs_copy_and_check():
    ex = mlp().simple_bind(mx.cpu(), data=(4, 7))
    x = np.random.RandomState(0).rand(4, 7).astype(np.float32)
    ex.forward(data=x)
    np.testing.assert_array_equal(ex.arg_dict["data"].asnumpy(), x)
    with pytest.raises(ValueError, match="Shape not match"):
        ex.forward(data=np.ones((3, 7)))
    with pytest.raises(TypeError, match="Unknown argument"):
        ex.forward(dat=x)


def test_outputs_match_the_numpy_interpreter_on_lenet():
    """The planned, bulked executor computes what the unplanned reference interpreter computes."""
    sym, shapes, _ = _case("lenet_train")
    shapes = dict(data=(2, 1, 28, 28), softmax_label=(2,))
    ex = sym.simple_bind(mx.cpu(), grad_req="null", **shapes)
    rng = np.random.RandomState(1)
    feed = {k: rng.uniform(-0.5, 0.5, a.shape).astype(np.float32) for k, a in ex.arg_dict.items()}
    out = ex.forward(is_train=False, **feed)[0].asnumpy()
    np.testing.assert_allclose(out, evaluate(sym._outputs, feed)[0], rtol=1e-5, atol=1e-6)


def test_backward_needs_head_gradient_unless_loss_layer():
    """Item 1: backward() without out_grads raises on a non-loss output; works with them."""
    sym = mx.sym.Activation(mx.sym.Variable("x"), act_type="tanh", name="t")
    ex = sym.simple_bind(mx.cpu(), x=(2, 3))
    ex.forward(is_train=True, x=np.full((2, 3), 0.5))
    with pytest.raises(MXNetError, match="head_gradient is required"):
        ex.backward()
    ex.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 1 - np.tanh(0.5) ** 2, rtol=1e-6)
    ex.backward(np.full((2, 3), 2.0, np.float32))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * (1 - np.tanh(0.5) ** 2), rtol=1e-6)
    with pytest.raises(MXNetError, match="shape"):
        ex.backward(mx.nd.ones((3, 2)))


def test_grad_req_add_accumulates():
    sym = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, no_bias=True, name="fc")
    ex = sym.simple_bind(mx.cpu(), grad_req={"fc_weight": "add"}, x=(3, 4))
    ex.arg_dict["x"][:] = 1.0
    ex.arg_dict["fc_weight"][:] = 1.0
    ex.grad_dict["fc_weight"][:] = 10.0
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones((3, 2)))
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), 10 + 2 * 3.0)


def test_training_flag_reaches_operators():
    """Dropout drops only when forward(is_train=True); BatchNorm moves its statistics only then."""
    x = mx.sym.Variable("x")
    sym = mx.sym.Group([mx.sym.Dropout(x, p=0.5, name="drop"),
                        mx.sym.BatchNorm(x, name="bn", fix_gamma=False)])
    ex = sym.simple_bind(mx.cpu(), grad_req="null", x=(64, 4))
    ex.arg_dict["x"][:] = np.random.RandomState(0).rand(64, 4) + 1
    ex.arg_dict["bn_gamma"][:] = 1.0
    ex.aux_dict["bn_moving_var"][:] = 1.0
    ex.forward(is_train=False)
    assert np.array_equal(ex.outputs[0].asnumpy(), ex.arg_dict["x"].asnumpy())
    assert not ex.aux_dict["bn_moving_mean"].asnumpy().any()
    ex.forward(is_train=True)
    assert (ex.outputs[0].asnumpy() == 0).mean() > 0.2
    assert ex.aux_dict["bn_moving_mean"].asnumpy().min() > 0.1


def test_run_time_error_names_the_node_and_engine_stays_usable():
    sym = mx.sym.random.normal(loc=0, scale=-1.0, shape=(2,), name="draw") + mx.sym.Variable("x")
    ex = sym.bind(mx.cpu(), {"x": mx.nd.zeros((2,))}, grad_req="null")
    with pytest.raises(MXNetError, match="draw"):
        ex.forward()[0].asnumpy()
    assert (mx.nd.ones((2,)) * 2).asnumpy().tolist() == [2, 2]


# -- the memory plan as arrays -----------------------------------------------------------------

def test_entries_sharing_storage_share_one_array_chunk():
    """In place (relu over fc) the two entries are views of one chunk, hence one engine variable."""
    ex = mlp().simple_bind(mx.cpu(), data=(4, 7))
    plan, arrays = ex._plan, ex._arrays
    sids = plan.graph.attrs["storage_id"]
    by_sid = {}
    for eid, sid in enumerate(sids):
        if sid >= 0:
            by_sid.setdefault(sid, set()).add(id(arrays[eid]._chunk))
    assert all(len(chunks) == 1 for chunks in by_sid.values())
    assert len({c for cs in by_sid.values() for c in cs}) == len(by_sid)
    assert any(i >= 0 for i in plan.graph.attrs["storage_inplace_index"])
    for name, eid in plan.grad_eids.items():      # gradients are written straight into grad arrays
        assert arrays[eid] is ex.grad_dict[name]


@pytest.mark.parametrize("name", ["mlp_train", "mlp_infer", "mlp_small", "bn_small"])
def test_debug_str_total_mb_allocated_as_mxnet(name):
    """Same graph, same figure: ``Total N MB allocated`` equals MXNet 1.9.1's debug_str()."""
    sym, shapes, grad_req = _case(name)
    ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
    text = ex.debug_str()
    assert text.endswith(f"Total {CASES[name]['mb']} MB allocated\nTotal 11 TempSpace resource requested\n")
    assert "Op:_backward_FullyConnected" in text or grad_req.get("fc_bias", "null") == "null"


def test_bulked_and_unbulked_runs_agree(monkeypatch):
    sym, shapes, grad_req = _case("bn_small")
    results = []
    for bulk in ("1", "0"):
        monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_TRAIN", bulk)
        ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
        assert (len(ex._fwd_segments) == 1) == (bulk == "1")
        _fill(ex, "bn_small")
        ex.forward(is_train=True)
        ex.backward([mx.nd.array(ARRAYS["bn_small/head/0"])])
        results.append([g.asnumpy() for g in ex.grad_arrays if g is not None])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_mirror_gives_the_same_gradients(monkeypatch):
    sym, shapes, grad_req = _case("bn_small")
    grads = []
    for flag in ("0", "1"):
        monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", flag)
        ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
        _fill(ex, "bn_small")
        ex.forward(is_train=True)
        ex.backward([mx.nd.array(ARRAYS["bn_small/head/0"])])
        grads.append({k: g.asnumpy() for k, g in ex.grad_dict.items() if g is not None})
        mirrored = [n.name for n in ex._plan.idx.nodes if n.name.endswith("_mirror")]
        assert bool(mirrored) == (flag == "1")
    for k in grads[0]:
        np.testing.assert_allclose(grads[0][k], grads[1][k], rtol=1e-5, atol=1e-6, err_msg=k)


# -- monitor, parameters, reshape, sharing -----------------------------------------------------

def test_monitor_callback_sees_every_node_output():
    ex = mlp().simple_bind(mx.cpu(), data=(4, 7))
    seen = {}
    ex.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.asnumpy()))
    ex.forward(is_train=True, data=np.ones((4, 7)))
    ex.backward()
    fwd = ("fc1_output", "relu1_output", "softmax_output")
    assert [n for n in seen if n in fwd] == list(fwd)
    assert "fc1_backward_output0" in seen
    np.testing.assert_array_equal(seen["softmax_output"], ex.outputs[0].asnumpy())
    names = []
    ex.set_monitor_callback(lambda name, arr: names.append(name), monitor_all=True)
    ex.forward()
    assert names[:3] == ["data", "fc1_data", "fc1_weight"]


def test_copy_params_from():
    ex = mlp().simple_bind(mx.cpu(), data=(4, 7))
    w = np.arange(42, dtype=np.float64).reshape(6, 7)
    ex.copy_params_from({"fc1_weight": mx.nd.array(w, dtype=np.float64)})
    np.testing.assert_array_equal(ex.arg_dict["fc1_weight"].asnumpy(), w)
    with pytest.raises(ValueError, match="nope"):
        ex.copy_params_from({"nope": mx.nd.ones((1,))})
    ex.copy_params_from({"nope": mx.nd.ones((1,))}, allow_extra_params=True)


def test_reshape_shares_parameters_and_checks_sizes():
    ex = mlp().simple_bind(mx.cpu(), data=(8, 7))
    ex.arg_dict["fc1_weight"][:] = 0.5
    small = ex.reshape(data=(2, 7), softmax_label=(2,))
    assert small.arg_dict["fc1_weight"] is ex.arg_dict["fc1_weight"]
    assert small.arg_dict["data"]._chunk is ex.arg_dict["data"]._chunk
    assert small.forward(data=np.ones((2, 7)))[0].shape == (2, 10)
    with pytest.raises(MXNetError, match="partial_shaping"):
        ex.reshape(data=(2, 7))
    with pytest.raises(MXNetError, match="allow_up_sizing"):
        ex.reshape(data=(16, 7), softmax_label=(16,))
    big = ex.reshape(allow_up_sizing=True, data=(16, 7), softmax_label=(16,))
    assert big.outputs[0].shape == (16, 10) and big.arg_dict["fc1_weight"] is ex.arg_dict["fc1_weight"]


def test_shared_exec_reuses_the_memory_pool_and_arrays():
    sym = mlp()
    ex = sym.simple_bind(mx.cpu(), data=(8, 7))
    params = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    ex2 = sym.simple_bind(mx.cpu(), data=(4, 7), shared_exec=ex, shared_arg_names=params)
    assert ex2._pool is ex._pool
    assert all(ex2.arg_dict[n] is ex.arg_dict[n] for n in params)
    assert ex2.forward(data=np.ones((4, 7)))[0].shape == (4, 10)


def test_group2ctx_places_the_group_elsewhere():
    """A group mapped to another device runs there (tests/test_placement.py has the details)."""
    with mx.AttrScope(ctx_group="dev1"):
        sym = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, name="fc")
    ex = sym.simple_bind(mx.cpu(), group2ctx={"dev1": mx.cpu(1)}, x=(2, 3))
    assert ex.forward()[0].context == mx.cpu(1)
    assert sym.simple_bind(mx.cpu(), group2ctx={"dev1": mx.cpu()}, x=(2, 3)).forward()[0].shape == (2, 2)


def test_group_with_a_variable_output_and_an_input_read_twice():
    """Gradients of an input read by several nodes are summed; a variable output is the bound array
    and receives its head gradient too; BlockGrad passes none; MakeLoss needs none."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    y = x * w + x
    sym = mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(y)), x, mx.sym.BlockGrad(y)])
    ex = sym.simple_bind(mx.cpu(), x=(2, 3), w=(2, 3))
    ex.arg_dict["x"][:] = 2.0
    ex.arg_dict["w"][:] = 3.0
    outs = ex.forward(is_train=True)
    assert outs[1] is ex.arg_dict["x"]
    ex.backward([None, mx.nd.ones((2, 3)), mx.nd.ones((2, 3))])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.full((2, 3), 3.0 + 1 + 1))
    np.testing.assert_allclose(ex.grad_dict["w"].asnumpy(), np.full((2, 3), 2.0))


def test_two_arguments_sharing_one_gradient_entry_get_separate_arrays():
    ex = mx.sym.elemwise_add(mx.sym.Variable("x"), mx.sym.Variable("w")).simple_bind(mx.cpu(), x=(2,), w=(2,))
    ex.forward(is_train=True)
    ex.backward(mx.nd.array([1.0, 2.0]))
    assert ex.grad_dict["x"] is not ex.grad_dict["w"]
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), [1, 2])
    np.testing.assert_allclose(ex.grad_dict["w"].asnumpy(), [1, 2])


def test_imperative_writes_after_forward_wait_for_it():
    """Executor ops and NDArray ops share one engine: a write to an argument pushed right after
    forward() waits until forward has read it, and a read of the output waits for forward."""
    sym = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=256, no_bias=True, name="fc")
    ex = sym.simple_bind(mx.cpu(), grad_req="null", x=(256, 256))
    ex.arg_dict["fc_weight"][:] = 1.0
    ex.arg_dict["x"][:] = 1.0
    out = ex.forward()[0]
    ex.arg_dict["x"][:] = 2.0                # must not leak into the pushed forward
    total = (out * 1).asnumpy()
    np.testing.assert_array_equal(total, np.full((256, 256), 256.0))
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), np.full((256, 256), 512.0))


def test_segment_sizes_follow_the_bulk_flags(monkeypatch):
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD", "2")
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD", "3")
    ex = mlp().simple_bind(mx.cpu(), data=(4, 7))
    assert [len(s.ops) for s in ex._fwd_segments] == [2, 2, 2]      # fc, relu, fc, relu, fc, softmax
    assert all(len(s.ops) <= 3 for s in ex._bwd_segments) and len(ex._bwd_segments) >= 3
    inference = mlp().simple_bind(mx.cpu(), grad_req="null", data=(4, 7))
    assert len(inference._fwd_segments) == 1 and not inference._bwd_segments


def test_two_inputs_with_one_name_are_refused():
    sym = mx.sym.elemwise_add(mx.sym.Variable("x"), mx.sym.Variable("x"))
    with pytest.raises(MXNetError, match="several inputs named"):
        sym.simple_bind(mx.cpu(), x=(2,))


def test_grad_req_add_does_not_leak_into_other_gradients():
    """``x + tanh(w)`` with x on 'add': tanh's backward must read the head gradient, not x's
    accumulated gradient array (MXNet 1.9.1 gives w the gradient 11 * (1 - tanh^2) here)."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    ex = (x + mx.sym.tanh(w)).simple_bind(mx.cpu(), grad_req={"x": "add", "w": "write"}, x=(3,), w=(3,))
    ex.arg_dict["w"][:] = 0.5
    ex.grad_dict["x"][:] = 10.0
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((3,)))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.full(3, 11.0))
    np.testing.assert_allclose(ex.grad_dict["w"].asnumpy(), np.full(3, 1 - np.tanh(0.5) ** 2), rtol=1e-6)


def test_grad_req_dict_ignores_names_that_are_not_arguments():
    """As MXNet: a grad_req dict may name arguments of another graph; unnamed arguments get 'null'."""
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    exe = sym.simple_bind(mx.cpu(), data=(1, 3), grad_req={"data": "add", "parameters": "null"})
    assert [g is None for g in exe.grad_arrays] == [False, True, True]


def test_simple_bind_shared_buffer_holds_data_and_their_gradients_only():
    """As MXNet's graph executor: ``shared_buffer`` gets the non-shared arguments and, under
    ``'grad of <name>'``, their gradients; the ``shared_arg_names`` parameters stay out of it. A
    second executor views the buffer (smaller shapes) and shares the parameters."""
    d = mx.sym.Variable("data")
    s = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(d, num_hidden=3, name="fc"), name="softmax")
    buf = {}
    params = ["fc_weight", "fc_bias"]
    e1 = s.simple_bind(mx.cpu(), data=(4, 5), shared_arg_names=params, shared_buffer=buf)
    assert sorted(buf) == ["data", "grad of data", "grad of softmax_label", "softmax_label"]
    assert buf["grad of data"] is e1.grad_dict["data"]
    e2 = s.simple_bind(mx.cpu(), data=(2, 5), shared_arg_names=params, shared_buffer=buf,
                       shared_exec=e1, grad_req={"data": "null", "softmax_label": "null",
                                                 "fc_weight": "write", "fc_bias": "write"})
    assert e2.arg_dict["fc_weight"] is e1.arg_dict["fc_weight"]
    e2.arg_dict["data"][:] = 7
    np.testing.assert_array_equal(e1.arg_dict["data"].asnumpy()[:2], 7)    # a view of the buffer
    buf2 = {}
    s.simple_bind(mx.cpu(), data=(4, 5), shared_arg_names=params, shared_buffer=buf2,
                  grad_req="null")
    assert sorted(buf2) == ["data", "softmax_label"]


def test_bind_passes_over_extra_grad_req_names_and_simple_bind_over_non_shapes():
    """As MXNet: a grad_req dict may name inputs the symbol lacks; simple_bind reads only tuple
    values as shapes (a caller may hand it the op's own axis=..., mode=...)."""
    x, w = mx.sym.var("x"), mx.sym.var("w")
    conv = mx.sym.Convolution(x, w, None, num_filter=2, kernel=(1,), no_bias=True)
    args = {"x": mx.nd.ones((1, 1, 3)), "w": mx.nd.ones((2, 1, 1)), "b": None}
    grads = {"x": mx.nd.zeros((1, 1, 3)), "w": mx.nd.zeros((2, 1, 1)), "b": None}
    ex = conv.bind(mx.cpu(), args, args_grad=grads, grad_req={"x": "write", "w": "null", "b": "add"})
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((1, 2, 3)))
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), 2 * np.ones((1, 1, 3)))
    take = mx.sym.take(mx.sym.var("a"), mx.sym.var("indices"), axis=1, mode="clip")
    ex = take.simple_bind(mx.cpu(), a=(2, 3), indices=(4,), axis=1, mode="clip")
    assert ex.outputs[0].shape == (2, 4)
    with pytest.raises(MXNetError, match="not an input"):
        take.simple_bind(mx.cpu(), a=(2, 3), indices=(4,), c=(1,))


def test_monitor_names_inputs_as_mxnet_does():
    """monitor_all: inputs are <node>_<input name>, or <node>_input<i> for an operator MXNet
    gives no input names (Activation, SoftmaxActivation)."""
    data = mx.sym.Variable("data", shape=(2, 3))
    for sym, want in ((mx.sym.Activation(data, act_type="relu", name="act"),
                       ["data", "act_input0", "act_output"]),
                      (mx.sym.SoftmaxActivation(data, name="sm"), ["data", "sm_input0", "sm_output"]),
                      (mx.sym.softmax(data, name="s"), ["data", "s_data", "s_output"])):
        seen = []
        ex = sym.simple_bind(mx.cpu(), grad_req="null")
        ex.set_monitor_callback(lambda name, arr, seen=seen: seen.append(name), monitor_all=True)
        ex.forward()
        mx.nd.waitall()
        assert seen == want
