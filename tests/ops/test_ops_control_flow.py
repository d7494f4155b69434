"""The _foreach / _while_loop / _cond operators run by the executor: forward and gradients
against the same computation unrolled into an ordinary graph, and against central differences."""
import numpy as np
import pytest

import mxref as mx
from mxref.test_utils import check_numeric_gradient

RNG = np.random.RandomState(7)
T, B, H = 4, 2, 3


def _run(net, args, ograds=None):
    """Forward (training) and backward in float64; returns (outputs, {name: gradient})."""
    arrays = {k: mx.nd.array(v, dtype=np.float64) for k, v in args.items()}
    grads = {k: mx.nd.zeros(v.shape, dtype=np.float64) for k, v in args.items()}
    ex = net.bind(mx.cpu(), arrays, args_grad=grads)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    if ograds is None:
        ograds = [RNG.uniform(-1, 1, o.shape) for o in outs]
    ex.backward([mx.nd.array(g, dtype=np.float64) for g in ograds])
    return outs, {k: g.asnumpy() for k, g in grads.items()}, ograds


def _assert_same(a, b):
    (outs_a, grads_a, _), (outs_b, grads_b, _) = a, b
    assert len(outs_a) == len(outs_b)
    for x, y in zip(outs_a, outs_b):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    for k in grads_b:
        np.testing.assert_allclose(grads_a[k], grads_b[k], rtol=1e-10, atol=1e-12, err_msg=k)


def _rnn_step(x, h, w, u):
    """A small recurrent step: out = tanh(x * w + h * u); the new state mixes out and h."""
    out = mx.sym.tanh(x * w + h * u)
    return out, out * 0.5 + h * 0.25


def _foreach_net():
    w, u = mx.sym.var("w"), mx.sym.var("u")
    outs, states = mx.sym.contrib.foreach(
        lambda x, s: (lambda o, h: (o, [h]))(*_rnn_step(x, s[0], w, u)),
        mx.sym.var("data"), [mx.sym.var("h0")])
    return mx.sym.Group([outs] + states)


def _foreach_unrolled():
    w, u, h = mx.sym.var("w"), mx.sym.var("u"), mx.sym.var("h0")
    outs = []
    for x in mx.sym.split(mx.sym.var("data"), num_outputs=T, axis=0, squeeze_axis=True):
        out, h = _rnn_step(x, h, w, u)
        outs.append(out)
    return mx.sym.Group([mx.sym.stack(*outs, axis=0), h])


FOREACH_ARGS = {"data": RNG.uniform(-1, 1, (T, B, H)), "h0": RNG.uniform(-1, 1, (B, H)),
                "w": RNG.uniform(-1, 1, (B, H)), "u": RNG.uniform(-1, 1, (B, H))}


def test_foreach_matches_the_unrolled_graph():
    """Outputs, and gradients of data, the initial state and the free inputs w, u."""
    loop = _run(_foreach_net(), FOREACH_ARGS)
    _assert_same(loop, _run(_foreach_unrolled(), FOREACH_ARGS, loop[2]))


def test_foreach_numeric_gradient():
    check_numeric_gradient(_foreach_net(), FOREACH_ARGS, dtype=np.float64, rtol=1e-5, atol=1e-7)


def test_foreach_without_states_and_with_two_data_arrays():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    outs, states = mx.sym.contrib.foreach(lambda xs, s: ([xs[0] * xs[1], xs[0] + 1], []), [a, b], [])
    assert states == [] and len(outs) == 2
    args = {"a": RNG.uniform(size=(3, 2)), "b": RNG.uniform(size=(3, 2))}
    res, grads, og = _run(mx.sym.Group(outs), args)
    np.testing.assert_allclose(res[0], args["a"] * args["b"])
    np.testing.assert_allclose(grads["a"], og[0] * args["b"] + og[1])


def test_foreach_gradient_accumulates_into_req_add():
    """grad_req='add' adds the loop's gradient to what the gradient array held."""
    net = _foreach_net()
    arrays = {k: mx.nd.array(v, dtype=np.float64) for k, v in FOREACH_ARGS.items()}
    grads = {k: mx.nd.ones(v.shape, dtype=np.float64) for k, v in FOREACH_ARGS.items()}
    ex = net.bind(mx.cpu(), arrays, args_grad=grads, grad_req="add")
    ex.forward(is_train=True)
    ograds = [mx.nd.ones(o.shape, dtype=np.float64) for o in ex.outputs]
    ex.backward(ograds)
    _, plain, _ = _run(net, FOREACH_ARGS, [o.asnumpy() for o in ograds])
    for k in plain:
        np.testing.assert_allclose(grads[k].asnumpy(), plain[k] + 1, rtol=1e-12)


def _while_net(max_iterations):
    b = mx.sym.var("b")
    outs, final = mx.sym.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: ([s * s, s + 1], [i + 1, mx.sym.sin(s) + b]),
        [mx.sym.var("i"), mx.sym.var("s")], max_iterations=max_iterations)
    return mx.sym.Group(outs + final)


def _while_unrolled(steps, rows):
    b, i, s = mx.sym.var("b"), mx.sym.var("i"), mx.sym.var("s")
    ys, zs = [], []
    for _ in range(steps):
        ys.append(s * s)
        zs.append(s + 1)
        i, s = i + 1, mx.sym.sin(s) + b
    pad = [mx.sym.zeros_like(ys[0])] * (rows - steps)
    return mx.sym.Group([mx.sym.stack(*(ys + pad), axis=0), mx.sym.stack(*(zs + pad), axis=0), i, s])


WHILE_ARGS = {"i": np.array([0.0]), "s": RNG.uniform(-1, 1, (2,)), "b": RNG.uniform(-1, 1, (2,))}


@pytest.mark.parametrize("max_iterations", [3, 5])
def test_while_loop_matches_the_unrolled_graph(max_iterations):
    """Three steps run; with room for five the outputs are padded with zero rows."""
    loop = _run(_while_net(max_iterations), WHILE_ARGS)
    assert loop[0][0].shape == (max_iterations, 2)
    _assert_same(loop, _run(_while_unrolled(3, max_iterations), WHILE_ARGS, loop[2]))


def test_while_loop_stops_at_max_iterations():
    outs, _, _ = _run(_while_net(2), WHILE_ARGS)
    assert outs[2][0] == 2          # i stopped at 2 although cond still held


def test_while_loop_numeric_gradient():
    check_numeric_gradient(_while_net(4), WHILE_ARGS, grad_nodes=["s", "b"], dtype=np.float64,
                           rtol=1e-5, atol=1e-7)


def _cond_net():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    return mx.sym.contrib.cond(mx.sym.sum(x) < 0, lambda: [x * y, mx.sym.exp(y)],
                               lambda: [x + y * y, x * 2])


@pytest.mark.parametrize("sign", [-1, 1])
def test_cond_runs_and_differentiates_the_branch_taken(sign):
    x, y = np.abs(RNG.uniform(0.5, 1, (3,))) * sign, RNG.uniform(-1, 1, (3,))
    outs, grads, og = _run(mx.sym.Group(_cond_net()), {"x": x, "y": y})
    if sign < 0:
        np.testing.assert_allclose(outs[0], x * y)
        np.testing.assert_allclose(grads["x"], og[0] * y)
        np.testing.assert_allclose(grads["y"], og[0] * x + og[1] * np.exp(y))
    else:
        np.testing.assert_allclose(outs[1], x * 2)
        np.testing.assert_allclose(grads["x"], og[0] + 2 * og[1])
        np.testing.assert_allclose(grads["y"], og[0] * 2 * y)
    check_numeric_gradient(mx.sym.Group(_cond_net()), {"x": x, "y": y}, dtype=np.float64,
                           rtol=1e-5, atol=1e-7)


def test_foreach_nested_in_foreach():
    """A loop over rows inside a loop over matrices equals the plain cumulative computation."""
    w = mx.sym.var("w")

    def outer(mat, s):
        def inner(row, t):
            new = mx.sym.tanh(row * w + t[0])
            return new, [new]
        rows, last = mx.sym.contrib.foreach(inner, mat, [s[0]])
        return rows * 2, last
    outs, state = mx.sym.contrib.foreach(outer, mx.sym.var("data"), [mx.sym.var("h")])
    net = mx.sym.Group([outs] + state)
    args = {"data": RNG.uniform(-1, 1, (2, 3, 4)), "h": RNG.uniform(-1, 1, (4,)),
            "w": RNG.uniform(-1, 1, (4,))}
    res, _, _ = _run(net, args)
    h, expect = args["h"], np.zeros((2, 3, 4))
    for i in range(2):
        for j in range(3):
            h = np.tanh(args["data"][i, j] * args["w"] + h)
            expect[i, j] = 2 * h
    np.testing.assert_allclose(res[0], expect, rtol=1e-12)
    np.testing.assert_allclose(res[1], h, rtol=1e-12)
    check_numeric_gradient(net, args, dtype=np.float64, rtol=1e-5, atol=1e-7)


def test_while_loop_inside_foreach():
    def body(x, s):
        outs, final = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 4,
                                                lambda v: (v, [v * 2]), [x], max_iterations=4)
        return final[0] + s[0], [s[0] + 1]
    outs, _ = mx.sym.contrib.foreach(body, mx.sym.var("data"), [mx.sym.var("s")])
    data = np.array([[0.5], [3.0], [5.0]])
    res, grads, og = _run(outs, {"data": data, "s": np.array([0.0])})
    np.testing.assert_allclose(res[0], [[4.0 + 0], [6.0 + 1], [5.0 + 2]])
    np.testing.assert_allclose(grads["data"], og[0] * [[8.0], [2.0], [1.0]])


def test_simple_bind_plans_the_loop_node_like_any_other():
    """simple_bind infers the free inputs' shapes through the body; the plan lists the node."""
    ex = _foreach_net().simple_bind(mx.cpu(), data=(T, B, H), h0=(B, H))
    assert ex.arg_dict["w"].shape == (B, H) and ex.arg_dict["u"].shape == (B, H)
    text = ex.debug_str()
    assert "Op:_foreach" in text and "Op:_backward_foreach" in text and "MB allocated" in text


def test_loops_run_side_by_side_on_the_threaded_engine():
    """Two executors of one loop graph, pushed together, share the compiled subgraph safely."""
    net = _foreach_net()
    exs = [net.bind(mx.cpu(), {k: mx.nd.array(v * (i + 1)) for k, v in FOREACH_ARGS.items()})
           for i in range(2)]
    outs = [ex.forward()[0] for ex in exs]
    for i, out in enumerate(outs):
        alone = _run(net, {k: v * (i + 1) for k, v in FOREACH_ARGS.items()})[0][0]
        np.testing.assert_allclose(out.asnumpy(), alone, rtol=1e-5, atol=1e-6)
