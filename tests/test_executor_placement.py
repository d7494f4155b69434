"""Executor placement (``group2ctx``): a graph split over several ``mx.cpu(i)`` devices computes
exactly what the one-device graph computes, with copies only at device boundaries, one per
(entry, destination), and a memory plan that never shares a block between devices."""
import json

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.engine.base import FnProperty

DEVICES = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]


@pytest.fixture(params=["NaiveEngine", "ThreadedEnginePerDevice"], autouse=True)
def engine_type(request):
    """Every test runs under both engines (the threaded one really runs devices concurrently)."""
    old = mx.engine.get().name
    mx.engine.set_engine(request.param)
    yield request.param
    mx.engine.set_engine(old)


def random_graph(seed: int, n_nodes: int = 9, n_groups: int = 3):
    """A random DAG of FullyConnected / tanh / add / multiply nodes over two inputs, every node in
    a random ``ctx_group``; the loss is a sum so backward needs no head gradient."""
    rng = np.random.RandomState(seed)
    values = [mx.sym.Variable("x"), mx.sym.Variable("y")]
    for i in range(n_nodes):
        with mx.AttrScope(ctx_group=f"g{rng.randint(n_groups)}"):
            kind = rng.randint(4)
            a = values[rng.randint(len(values))]
            b = values[rng.randint(len(values))]
            if kind == 0:
                v = mx.sym.FullyConnected(a, num_hidden=6, name=f"fc{i}")
            elif kind == 1:
                v = mx.sym.tanh(a, name=f"tanh{i}")
            elif kind == 2:
                v = mx.sym.elemwise_add(a, b, name=f"add{i}")
            else:
                v = mx.sym.elemwise_mul(a, b, name=f"mul{i}")
        values.append(v)
    with mx.AttrScope(ctx_group=f"g{rng.randint(n_groups)}"):
        loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.add_n(*values[2:], name="all"), name="total"))
    g2c = {f"g{k}": DEVICES[rng.randint(len(DEVICES))] for k in range(n_groups)}
    return loss, g2c


def run(sym, group2ctx, shapes, seed=1, grad_req="write"):
    ex = sym.simple_bind(mx.cpu(0), group2ctx=group2ctx, grad_req=grad_req, **shapes)
    rng = np.random.RandomState(seed)
    for name in sym.list_arguments():
        ex.arg_dict[name][:] = rng.uniform(-1, 1, ex.arg_dict[name].shape)
    ex.forward(is_train=True)
    ex.backward()
    outs = [o.asnumpy() for o in ex.outputs]
    grads = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
    return ex, outs, grads


def placed_nodes(ex):
    graph = ex._plan.graph
    idx = graph.indexed
    ctxs = graph.attrs["device_ctx"]
    return idx, [ctxs[d] for d in graph.attrs["device"]]


def check_copies(ex):
    """Every cross-device edge goes through a copy; copies sit only on boundaries, once each."""
    idx, where = placed_nodes(ex)
    seen = set()
    n_copies = 0
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            continue
        for i, e in enumerate(node.inputs):
            src = where[idx.node_id[id(e.node)]]
            if i not in node.op.ignore_inputs and node.op.name != "_CrossDeviceCopy":
                assert src == where[nid], f"{node.name} on {where[nid]} reads {e.node.name} on {src}"
        if node.op.name == "_CrossDeviceCopy":
            n_copies += 1
            src_node = node.inputs[0].node
            src = where[idx.node_id[id(src_node)]]
            assert src != where[nid], f"copy {node.name} does not cross a device"
            assert node.params["src"] == str(src) and node.params["dst"] == str(where[nid])
            key = (id(src_node), node.inputs[0].index, where[nid])
            assert key not in seen, f"entry {src_node.name} copied twice to {where[nid]}"
            seen.add(key)
    return n_copies


def check_plan_per_device(ex):
    """No storage block holds entries of two devices, and every array lives on its node's device."""
    idx, where = placed_nodes(ex)
    sids = ex._plan.graph.attrs["storage_id"]
    owner = {}
    for nid, node in enumerate(idx.nodes):
        for i in range(node.num_outputs()):
            eid = idx.entry_id(nid, i)
            if sids[eid] >= 0:
                assert owner.setdefault(sids[eid], where[nid]) == where[nid], \
                    f"block {sids[eid]} shared by {owner[sids[eid]]} and {where[nid]}"
            arr = ex._arrays[eid]
            if arr is not None and arr.size:
                assert arr.context == where[nid], f"{node.name} output on {arr.context}, node on {where[nid]}"


@pytest.mark.parametrize("seed", range(6))
def test_random_placed_graph_equals_one_device(seed):
    sym, g2c = random_graph(seed)
    shapes = {"x": (4, 6), "y": (4, 6)}
    _, outs1, grads1 = run(sym, None, shapes)
    ex, outs2, grads2 = run(sym, g2c, shapes)
    for a, b in zip(outs1, outs2):
        np.testing.assert_array_equal(a, b)
    assert grads1.keys() == grads2.keys()
    for name in grads1:
        np.testing.assert_array_equal(grads1[name], grads2[name], err_msg=name)
    assert len(set(g2c.values())) > 1 and check_copies(ex) > 0
    check_plan_per_device(ex)
    for name, arr in ex.arg_dict.items():
        assert ex.grad_dict[name].context == arr.context


def test_boundary_crossed_by_several_consumers_is_copied_once_per_device():
    x = mx.sym.Variable("x")
    with mx.AttrScope(ctx_group="a"):
        h = mx.sym.tanh(x, name="h")
    with mx.AttrScope(ctx_group="b"):
        b_readers = [mx.sym.sin(h, name="s"), mx.sym.cos(h, name="c"), mx.sym.exp(h, name="e")]
    with mx.AttrScope(ctx_group="c"):
        c_readers = [mx.sym.square(h, name="q"), mx.sym.abs(h, name="ab")]
        loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.add_n(*b_readers, *c_readers)))
    g2c = {"a": mx.cpu(0), "b": mx.cpu(1), "c": mx.cpu(2)}
    _, outs1, grads1 = run(loss, None, {"x": (3, 4)})
    ex, outs2, grads2 = run(loss, g2c, {"x": (3, 4)})
    np.testing.assert_array_equal(outs1[0], outs2[0])
    np.testing.assert_array_equal(grads1["x"], grads2["x"])
    idx, where = placed_nodes(ex)
    fwd_copies = [n for n in idx.nodes[:ex._plan.num_forward_nodes]
                  if not n.is_variable and n.op.name == "_CrossDeviceCopy"]
    # h -> cpu(1) and h -> cpu(2) (three and two readers), then the b sums -> cpu(2)
    h_copies = sorted(n.params["dst"] for n in fwd_copies if n.inputs[0].node.name == "h")
    assert h_copies == ["cpu(1)", "cpu(2)"]
    check_copies(ex)
    check_plan_per_device(ex)


def test_node_with_inputs_from_three_devices():
    xs = [mx.sym.Variable(f"x{i}") for i in range(3)]
    parts = []
    for i, x in enumerate(xs):
        with mx.AttrScope(ctx_group=f"d{i}"):
            parts.append(mx.sym.tanh(x, name=f"t{i}") * (i + 1))
    with mx.AttrScope(ctx_group="d3"):
        loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.add_n(*parts, name="join")))
    g2c = {f"d{i}": mx.cpu(i) for i in range(4)}
    shapes = {f"x{i}": (2, 5) for i in range(3)}
    _, outs1, grads1 = run(loss, None, shapes)
    ex, outs2, grads2 = run(loss, g2c, shapes)
    np.testing.assert_array_equal(outs1[0], outs2[0])
    for k in grads1:
        np.testing.assert_array_equal(grads1[k], grads2[k])
    idx, where = placed_nodes(ex)
    join = next(n for n in idx.nodes if n.name == "join")
    assert where[idx.node_id[id(join)]] == mx.cpu(3)
    assert sorted(e.node.params["src"] for e in join.inputs) == ["cpu(0)", "cpu(1)", "cpu(2)"]
    assert check_copies(ex) == 6     # three forward copies in, three gradient copies back
    for i in range(3):
        assert ex.arg_dict[f"x{i}"].context == mx.cpu(i) == ex.grad_dict[f"x{i}"].context


def test_batchnorm_aux_states_on_a_non_default_device():
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="first"):
        h = mx.sym.FullyConnected(data, num_hidden=5, name="fc")
    with mx.AttrScope(ctx_group="second"):
        h = mx.sym.BatchNorm(h, name="bn", fix_gamma=False)
        loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(h)))
    g2c = {"first": mx.cpu(0), "second": mx.cpu(1)}
    ex1, outs1, grads1 = run(loss, None, {"data": (6, 4)})
    ex2, outs2, grads2 = run(loss, g2c, {"data": (6, 4)})
    for name in ("bn_moving_mean", "bn_moving_var"):
        assert ex2.aux_dict[name].context == mx.cpu(1)
        start = 1.0 if name.endswith("var") else 0.0          # the statistics moved off their start
        assert np.abs(ex2.aux_dict[name].asnumpy() - start).max() > 1e-4
        np.testing.assert_array_equal(ex1.aux_dict[name].asnumpy(), ex2.aux_dict[name].asnumpy())
    np.testing.assert_array_equal(outs1[0], outs2[0])
    for k in grads1:
        np.testing.assert_array_equal(grads1[k], grads2[k])
    check_plan_per_device(ex2)


def test_bind_with_arrays_on_several_devices():
    """``bind``: each variable lives where its array is; gradients go to their arrays' devices."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    with mx.AttrScope(ctx_group="dev"):
        y = mx.sym.dot(x, w, name="prod")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.tanh(y)))
    rng = np.random.RandomState(0)
    xv, wv = rng.randn(3, 4).astype(np.float32), rng.randn(4, 2).astype(np.float32)
    ref = loss.bind(mx.cpu(0), {"x": mx.nd.array(xv), "w": mx.nd.array(wv)},
                    args_grad={"x": mx.nd.zeros((3, 4)), "w": mx.nd.zeros((4, 2))})
    ref.forward(is_train=True)
    ref.backward()
    args = {"x": mx.nd.array(xv, ctx=mx.cpu(2)), "w": mx.nd.array(wv, ctx=mx.cpu(0))}
    grads = {"x": mx.nd.zeros((3, 4), ctx=mx.cpu(0)), "w": mx.nd.zeros((4, 2), ctx=mx.cpu(2))}
    ex = loss.bind(mx.cpu(0), args, args_grad=grads, group2ctx={"dev": mx.cpu(1)})
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_array_equal(ref.outputs[0].asnumpy(), ex.outputs[0].asnumpy())
    for k in ("x", "w"):
        np.testing.assert_array_equal(ref.grad_dict[k].asnumpy(), grads[k].asnumpy())
    check_copies(ex)


def test_copies_run_on_the_copy_workers_and_debug_str_shows_devices():
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="a"):
        h = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    with mx.AttrScope(ctx_group="b"):
        out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc2"), name="sm")
    ex = out.simple_bind(mx.cpu(0), data=(32, 100), group2ctx={"a": mx.cpu(0), "b": mx.cpu(1)})
    copies = [op for op in ex._fwd_ops + ex._bwd_ops if op.op_name == "_CrossDeviceCopy"]
    assert len(copies) == 2 and all(op.prop == FnProperty.CPU_PRIORITIZED for op in copies)
    for seg in ex._fwd_segments + ex._bwd_segments:
        assert len({op.ctx for op in seg.ops}) == 1
        assert len(seg.ops) == 1 or all(op.prop == FnProperty.NORMAL for op in seg.ops)
    text = ex.debug_str()
    assert "Op:FullyConnected, Name=fc1, Device=cpu(0)" in text
    assert "Op:FullyConnected, Name=fc2, Device=cpu(1)" in text
    lines = text.splitlines()
    per_device = {ln.split(":")[0]: int(ln.split("(")[-1].split()[0]) for ln in lines
                  if ln.startswith("cpu(") and "MB allocated" in ln}
    assert set(per_device) == {"cpu(0)", "cpu(1)"}
    # fc1's 32x64 output lives on cpu(0) (and its gradient), fc2's 32x10 ones on cpu(1)
    assert per_device["cpu(0)"] >= 32 * 64 * 4 and per_device["cpu(1)"] >= 32 * 10 * 4
    assert lines[-2].startswith("Total ") and lines[-2].endswith(" MB allocated")


def test_copies_run_on_the_priority_workers_in_the_trace(tmp_path, engine_type):
    """The profiler shows each copy on a ``cpu priority`` thread, each compute op on its device's
    worker: a copy never waits behind either device's queue."""
    if engine_type == "NaiveEngine":
        pytest.skip("the naive engine runs everything on the calling thread")
    sym, g2c = random_graph(2)
    ex = sym.simple_bind(mx.cpu(0), group2ctx=g2c, x=(4, 6), y=(4, 6))
    path = str(tmp_path / "trace.json")
    mx.profiler.dumps(reset=True)
    mx.profiler.set_config(profile_all=True, filename=path)
    mx.profiler.set_state("run")
    ex.forward(is_train=True)
    ex.backward()
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    thread = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    device = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    spans = [e for e in events if e["ph"] == "X" and e["name"] not in ("DeleteVariable", "WaitForVar")]
    copies = [e for e in spans if e["name"] == "_CrossDeviceCopy"]
    assert len(copies) == check_copies(ex)
    for e in spans:
        name = thread[(e["pid"], e["tid"])]
        if e["name"] == "_CrossDeviceCopy":
            assert name.startswith("cpu priority"), name
        else:
            assert name.startswith(f"{device[e['pid']]} worker"), (e["name"], name)


def test_group2ctx_errors_are_clear():
    with mx.AttrScope(ctx_group="dev1"):
        sym = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, name="fc")
    with pytest.raises(MXNetError, match="fc.*ctx_group 'dev1'.*does not map.*'devX'"):
        sym.simple_bind(mx.cpu(), group2ctx={"devX": mx.cpu(1)}, x=(2, 3))
    with pytest.raises(MXNetError, match="'dev1' to gpu\\(97\\), which does not exist"):
        sym.simple_bind(mx.cpu(), group2ctx={"dev1": mx.gpu(97)}, x=(2, 3))
    with pytest.raises(MXNetError, match="group2ctx\\['dev1'\\] must be a Context"):
        sym.simple_bind(mx.cpu(), group2ctx={"dev1": "cpu(1)"}, x=(2, 3))
    with mx.AttrScope(ctx_group="dev1"):
        bn = mx.sym.BatchNorm(mx.sym.Variable("d"), name="bn")
    shapes = {"d": (2, 3)}
    ex = bn.simple_bind(mx.cpu(), **shapes)
    aux = {n: a.copyto(mx.cpu(0)) for n, a in ex.aux_dict.items()}
    args = {n: a.copyto(mx.cpu(1)) for n, a in ex.arg_dict.items()}
    with pytest.raises(MXNetError, match=r"auxiliary state .bn_moving_mean. is on cpu\(0\).*on cpu\(1\)"):
        bn.bind(mx.cpu(), args, aux_states=aux, group2ctx={"dev1": mx.cpu(1)})


def test_mirrored_nodes_follow_their_original(monkeypatch):
    """With recomputation on, a recomputed node runs on its original's device."""
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    monkeypatch.setenv("MXREF_MIRROR_POLICY", "cheap")
    sym, g2c = random_graph(3, n_nodes=12)
    shapes = {"x": (4, 6), "y": (4, 6)}
    _, outs1, grads1 = run(sym, None, shapes)
    ex, outs2, grads2 = run(sym, g2c, shapes)
    for k in grads1:
        np.testing.assert_array_equal(grads1[k], grads2[k])
    idx, where = placed_nodes(ex)
    mirrors = [n for n in idx.nodes if "mirror_of" in n.extra]
    assert mirrors
    for n in mirrors:
        assert where[idx.node_id[id(n)]] == where[idx.node_id[id(n.extra["mirror_of"])]]
    check_copies(ex)
    check_plan_per_device(ex)


def test_reshape_keeps_the_placement():
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="a"):
        h = mx.sym.tanh(mx.sym.FullyConnected(data, num_hidden=5, name="fc1"))
    with mx.AttrScope(ctx_group="b"):
        loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.FullyConnected(h, num_hidden=3, name="fc2")))
    g2c = {"a": mx.cpu(1), "b": mx.cpu(2)}
    outs = []
    for group2ctx in (None, g2c):
        ex = loss.simple_bind(mx.cpu(0), data=(4, 6), group2ctx=group2ctx)
        rng = np.random.RandomState(0)
        for arr in ex.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape)
        small = ex.reshape(data=(2, 6))
        small.forward(is_train=True, data=np.ones((2, 6)))
        small.backward()
        outs.append((small, small.outputs[0].asnumpy(), small.grad_dict["fc1_weight"].asnumpy()))
    (_, o1, g1), (placed, o2, g2) = outs
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(g1, g2)
    assert placed.arg_dict["fc2_weight"].context == mx.cpu(2) and placed.outputs[0].context == mx.cpu(2)
    check_copies(placed)
    check_plan_per_device(placed)


def test_without_group2ctx_nothing_changes():
    sym, _ = random_graph(0)
    ex = sym.simple_bind(mx.cpu(0), x=(2, 6), y=(2, 6))
    assert ex._plan.node_ctx is None
    assert not any(op.op_name == "_CrossDeviceCopy" for op in ex._fwd_ops + ex._bwd_ops)
