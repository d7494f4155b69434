"""CachedOp: an executor run on the caller's inputs, outputs and head gradients gives what the
executor gives with copies, call after call, and the engine orders it against other work."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.base import MXNetError
from mxref.cached_op import CachedOp

RNG = np.random.default_rng(7)


def _bind(sym, shapes, data_names, grad_req="write"):
    """Two executors of ``sym`` with the same parameter values: one plain, one for a CachedOp."""
    execs = []
    for _ in range(2):
        reqs = {n: ("null" if n in data_names else grad_req) for n in sym.list_arguments()}
        execs.append(sym.simple_bind(mx.cpu(), grad_req=reqs, **shapes))
    for name, arr in execs[0].arg_dict.items():
        if name not in data_names:
            value = RNG.standard_normal(arr.shape).astype(arr.dtype)
            arr[:] = value
            execs[1].arg_dict[name][:] = value
    return execs


def _check_against_executor(sym, shapes, data_names, calls=3, heads=True):
    plain, ex = _bind(sym, shapes, data_names)
    cached = CachedOp(ex, data_names)
    kept = []
    for _ in range(calls):
        inputs = [mx.nd.array(RNG.standard_normal(shapes[n])) for n in data_names]
        outs = cached.forward(inputs, True)
        want = [o.asnumpy().copy() for o in plain.forward(is_train=True, **dict(zip(data_names, inputs)))]
        for o, w in zip(outs, want):
            np.testing.assert_array_equal(o.asnumpy(), w)
        if heads:
            ograds = [mx.nd.array(RNG.standard_normal(o.shape)) for o in outs]
            cached.backward(inputs, outs, ograds, True)
            plain.backward(ograds)
            for name, g in plain.grad_dict.items():
                if g is not None:
                    np.testing.assert_array_equal(ex.grad_dict[name].asnumpy(), g.asnumpy(), err_msg=name)
        kept.append((outs, want))
    for outs, want in kept:     # each call's outputs are its own: later calls did not overwrite them
        for o, w in zip(outs, want):
            np.testing.assert_array_equal(o.asnumpy(), w)


def _mlp():
    x = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=6, name="fc1"), act_type="relu")
    return mx.sym.FullyConnected(h, num_hidden=3, name="fc2")


def test_mlp_matches_executor_over_calls(any_engine):
    _check_against_executor(_mlp(), {"data": (4, 5)}, ["data"])


@pytest.mark.parametrize("bulk", ["0", "2"])
def test_segments_of_any_size(monkeypatch, bulk):
    """One node per segment (bulking off) or two: the slots are found in whichever segment
    holds the nodes that touch them."""
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_TRAIN", "1" if bulk != "0" else "0")
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN", bulk if bulk != "0" else "15")
    x = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=6, name="fc1"), act_type="tanh")
    out = mx.sym.Group([h, mx.sym.FullyConnected(h, num_hidden=3, name="fc2")])
    _check_against_executor(out, {"data": (4, 5)}, ["data"])


def test_output_made_in_place_and_read_by_backward():
    """The last node (relu, in place on fc's output) writes the caller's new array; its backward
    reads that array; sigmoid's backward reads its output too."""
    x = mx.sym.var("data")
    fc = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    out = mx.sym.Group([mx.sym.Activation(fc, act_type="relu"),
                        mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=2, name="fc2"),
                                          act_type="sigmoid")])
    _check_against_executor(out, {"data": (3, 5)}, ["data"])


def test_output_also_read_by_a_later_node():
    x = mx.sym.var("data")
    h = mx.sym.tanh(mx.sym.FullyConnected(x, num_hidden=4, name="fc"))
    _check_against_executor(mx.sym.Group([h, h * h + 1]), {"data": (2, 3)}, ["data"])


def test_outputs_passed_through_or_repeated_are_copies():
    """An input returned as it is, a parameter, one node's output twice: copied, still correct."""
    x, w = mx.sym.var("data"), mx.sym.var("w")
    y = mx.sym.broadcast_mul(x, w)
    sym = mx.sym.Group([y, x, w, y])
    plain, ex = _bind(sym, {"data": (2, 3), "w": (1, 3)}, ["data"])
    cached = CachedOp(ex, ["data"])
    a = mx.nd.array(RNG.standard_normal((2, 3)))
    outs = cached.forward([a], True)
    want = plain.forward(is_train=True, data=a)
    for o, wnt in zip(outs, want):
        np.testing.assert_array_equal(o.asnumpy(), wnt.asnumpy())
    assert outs[1] is not a and outs[2] is not ex.arg_dict["w"]
    outs[1][:] = 0      # a copy: the caller's input is untouched
    np.testing.assert_array_equal(a.asnumpy() != 0, np.ones((2, 3), bool))


def test_two_inputs_and_the_same_array_for_both():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    w = mx.sym.var("w")
    sym = mx.sym.FullyConnected(a * b, weight=w, no_bias=True, num_hidden=2, name="fc")
    _check_against_executor(sym, {"a": (3, 4), "b": (3, 4)}, ["a", "b"])
    plain, ex = _bind(sym, {"a": (3, 4), "b": (3, 4)}, ["a", "b"])
    cached = CachedOp(ex, ["a", "b"])
    x = mx.nd.array(RNG.standard_normal((3, 4)))
    out = cached.forward([x, x], True)[0]
    np.testing.assert_array_equal(out.asnumpy(), plain.forward(is_train=True, a=x, b=x)[0].asnumpy())


def test_views_as_inputs():
    """Slices of one array (each an offset view) read as themselves."""
    plain, ex = _bind(_mlp(), {"data": (2, 5)}, ["data"])
    cached = CachedOp(ex, ["data"])
    big = mx.nd.array(RNG.standard_normal((6, 5)))
    for rows in (slice(0, 2), slice(2, 4), slice(4, 6)):
        got = cached.forward([big[rows]], False)[0].asnumpy()
        np.testing.assert_array_equal(got, plain.forward(data=big[rows])[0].asnumpy())


def test_engine_orders_the_call_against_writes_of_its_arrays():
    """The input is written by work pushed just before, and overwritten just after; the head
    gradient likewise: each read sees the value of its moment."""
    plain, ex = _bind(_mlp(), {"data": (4, 5)}, ["data"])
    cached = CachedOp(ex, ["data"])
    x = mx.nd.zeros((4, 5))
    value = RNG.standard_normal((4, 5))
    x[:] = value
    outs = cached.forward([x], True)
    x[:] = 1e6
    head = mx.nd.ones(outs[0].shape)
    cached.backward([mx.nd.array(value)], outs, [head], True)
    head[:] = -1e6
    want = plain.forward(is_train=True, data=mx.nd.array(value))[0]
    plain.backward([mx.nd.ones(want.shape)])
    np.testing.assert_array_equal(outs[0].asnumpy(), want.asnumpy())
    np.testing.assert_array_equal(ex.grad_dict["fc1_weight"].asnumpy(),
                                  plain.grad_dict["fc1_weight"].asnumpy())


def test_backward_checks_head_gradients():
    _, ex = _bind(_mlp(), {"data": (4, 5)}, ["data"])
    cached = CachedOp(ex, ["data"])
    x = mx.nd.ones((4, 5))
    outs = cached.forward([x], True)
    with pytest.raises(MXNetError, match="head gradient 0 has shape"):
        cached.backward([x], outs, [mx.nd.ones((4, 2))], True)
    with pytest.raises(MXNetError, match="output 0 needs a head gradient"):
        cached.backward([x], outs, [None], True)


def test_kernel_error_names_the_node_at_the_next_wait():
    x = mx.sym.var("data")
    sym = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    _, ex = _bind(sym, {"data": (2, 4)}, ["data"])
    cached = CachedOp(ex, ["data"])
    ex.arg_dict["fc_weight"]._data()      # the weight's memory exists; break the input instead
    bad = mx.nd.ones((2, 4))
    bad._np = np.ones((2, 5), np.float32)     # a corrupted view: the GEMM fails inside the engine
    out = cached.forward([bad], False)[0]
    with pytest.raises(Exception, match="FullyConnected") as info:
        out.wait_to_read()
    assert "fc" in str(info.value) or any("fc" in n for n in getattr(info.value, "__notes__", []))
    good = cached.forward([mx.nd.ones((2, 4))], False)[0]
    good.wait_to_read()         # the executor still works after the failure


def test_hybridized_outputs_of_successive_calls_are_independent():
    """No copy out: each call writes arrays of its own (the next call must not overwrite them)."""
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, activation="relu"), gluon.nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    xs = [mx.nd.array(RNG.standard_normal((3, 5))) for _ in range(3)]
    hybrid = [net(x) for x in xs]
    with autograd.record():
        recorded = [net(x) for x in xs]
    net.hybridize(False)
    for x, h, r in zip(xs, hybrid, recorded):
        want = net(x).asnumpy()
        np.testing.assert_allclose(h.asnumpy(), want, rtol=1e-6)
        np.testing.assert_allclose(r.asnumpy(), want, rtol=1e-6)


def test_hybridized_backward_reads_the_inputs_of_its_own_call():
    """Two recorded calls on different batches, differentiated in reverse order: each backward
    uses its own call's input (the gradient of w in x*w is x)."""
    class Scale(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.w = self.params.get("w", shape=(1, 3), init=mx.init.One())

        def hybrid_forward(self, F, x, w):
            return F.broadcast_mul(x, w)

    net = Scale()
    net.initialize()
    net.hybridize()
    a, b = mx.nd.array(np.full((2, 3), 2.0)), mx.nd.array(np.full((2, 3), 5.0))
    with autograd.record():
        ya = net(a)
        yb = net(b)
    grads = []
    for y in (yb, ya):
        g = autograd.grad(y, [net.w.data()], retain_graph=True)[0]
        grads.append(g.asnumpy())
    np.testing.assert_array_equal(grads[0], np.full((1, 3), 10.0))
    np.testing.assert_array_equal(grads[1], np.full((1, 3), 4.0))


def test_hybridized_numpy_second_input_is_converted():
    class Add(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return x + y

    net = Add()
    net.hybridize()
    x = mx.nd.ones((2, 2))
    out = net(x, mx.nd.array(np.full((2, 2), 3.0)))
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 4.0))


def test_hybridized_data_input_is_bound_without_memory():
    """The executor's own data array is a placeholder: each call reads the caller's array."""
    net = gluon.nn.Dense(3)
    net.initialize()
    net.hybridize()
    x = mx.nd.array(RNG.standard_normal((64, 100)))
    net(x).wait_to_read()
    (entry,) = [e for entries in net._cached_execs.values() for e in entries]
    placeholder = entry.executor.arg_dict["data"]
    assert placeholder.shape == (64, 100) and placeholder._chunk.nbytes == 0


def test_hybridized_block_returning_its_input_gives_a_copy():
    class Both(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x, x * 2

    net = Both()
    net.hybridize()
    x = mx.nd.array([[1.0, 2.0]])
    same, double = net(x)
    np.testing.assert_array_equal(double.asnumpy(), [[2.0, 4.0]])
    np.testing.assert_array_equal(same.asnumpy(), [[1.0, 2.0]])
    same[:] = 0
    np.testing.assert_array_equal(x.asnumpy(), [[1.0, 2.0]])


def test_a_run_segment_lets_go_of_the_call_arrays(monkeypatch):
    """The pushed function drops the call's arrays once it has run, so an engine that keeps a
    finished operation object around does not keep the call's outputs alive with it."""
    _, ex = _bind(_mlp(), {"data": (4, 5)}, ["data"])
    cached = CachedOp(ex, ["data"])
    eng = mx.engine.get()
    pushed, push = [], eng.push_sync
    monkeypatch.setattr(eng, "push_sync", lambda fn, *a, **k: (pushed.append(fn), push(fn, *a, **k)))
    x = mx.nd.ones((4, 5))
    out = cached.forward([x], False)[0]
    out.wait_to_read()
    fns = [fn for fn in pushed if hasattr(fn, "arrays")]      # the segment that read x
    assert fns and all(fn.arrays is None for fn in fns)
