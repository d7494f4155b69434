"""gradient: reverse-mode graph building, gradient aggregation, zero gradients, copies and mirrors."""
import numpy as np
import pytest
from passes_helpers import op, var

from mxref.base import MXNetError
from mxref.graph import Graph, Node, NodeEntry, apply_pass, make_node, topo_sort
from mxref.ops import registry
from mxref.ops.registry import OpDef
from mxref.passes.gradient import aggregate_gradient, full_graph, gradient
from mxref.symbol.eval_numpy import evaluate


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        hi = f()
        x[i] = old - eps
        lo = f()
        x[i] = old
        g[i] = (hi - lo).sum() / (2 * eps)
    return g


def _ops(graph_outputs):
    return [n.op.name for n in topo_sort(graph_outputs) if not n.is_variable]


def test_gradient_matches_numeric_with_a_reused_input():
    """d/dx, d/dw of tanh(x * w) + x: x has two consumers whose gradients are summed."""
    x, w = var("x"), var("w")
    y = op("elemwise_add", op("tanh", op("elemwise_mul", x, w)), x)
    head = var("head")
    g = apply_pass(Graph([y]), "gradient", xs=[x, w], ys_out_grad=[head])
    assert g.attrs["grad_of"] == [x, w]
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((3, 4)), "w": rng.standard_normal((3, 4)),
            "head": np.ones((3, 4))}
    dx, dw = evaluate(g.outputs, feed)
    fy = lambda: evaluate([y], feed)[0]
    np.testing.assert_allclose(dx, _numeric_grad(fy, feed["x"]), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dw, _numeric_grad(fy, feed["w"]), rtol=1e-6, atol=1e-8)
    assert "add_n" in _ops([g.outputs[0]]), "x's two gradients are summed by ElementWiseSum"


def test_head_gradient_scales_result():
    """The head gradient is the seed of the backward pass (here 2 * ones)."""
    x = var("x")
    y = op("tanh", x)
    g = gradient(Graph([y]), xs=[x], ys_out_grad=[var("head")])
    feed = {"x": np.linspace(-1, 1, 5), "head": np.full(5, 2.0)}
    np.testing.assert_allclose(evaluate(g.outputs, feed)[0], 2 * (1 - np.tanh(feed["x"]) ** 2))


@pytest.mark.parametrize("n,kind", [(2, "add_n"), (7, "add_n"), (8, "chain"), (10, "chain")])
def test_aggregation_uses_one_sum_below_the_cap_and_a_chain_above(n, kind):
    """Fewer than MXNET_EXEC_INPLACE_GRAD_SUM_CAP terms: one ElementWiseSum; else _grad_add chain."""
    x = var("x")
    terms = [op("_tp_plain", x) for _ in range(n)]
    total = aggregate_gradient(list(terms))
    if kind == "add_n":
        assert total.node.op.name == "add_n" and total.node.params["num_args"] == n
    else:
        assert total.node.op is registry.get("identity") and total.node.name == "sum_grad_final"
        adds = [m for m in topo_sort([total]) if m.op is not None and m.op.name == "_grad_add"]
        assert len(adds) == n - 1
        # each later term waits for the previous partial sum, fixing the summation order
        assert terms[2].node.control_deps and terms[2].node.control_deps[0].op.name == "_grad_add"
    vals = evaluate([total], {"x": np.arange(3.0)})[0]
    np.testing.assert_allclose(vals, n * np.arange(3.0))


def test_sum_cap_read_from_environment(monkeypatch):
    """MXNET_EXEC_INPLACE_GRAD_SUM_CAP=3 turns a 3-term sum into a chain."""
    monkeypatch.setenv("MXNET_EXEC_INPLACE_GRAD_SUM_CAP", "3")
    x = var("x")
    total = aggregate_gradient([op("_tp_plain", x) for _ in range(3)])
    assert total.node.op is registry.get("identity")


def test_zero_gradients_are_dropped_from_sums():
    """zeros_like terms vanish from a sum; if all are zero one is kept."""
    x = var("x")
    real = op("_tp_plain", x)
    zero = op("zeros_like", x)
    assert aggregate_gradient([zero, real, zero]) is real
    assert aggregate_gradient([zero, zero]) is zero


def test_unreachable_x_raises():
    x, other = var("x"), var("other")
    with pytest.raises(MXNetError, match="unreachable from the outputs"):
        gradient(Graph([op("tanh", x)]), xs=[other], ys_out_grad=[var("h")])


def test_non_differentiable_op_raises_with_nonzero_gradient():
    """An op without a gradient function may only receive zero gradients."""
    if not registry.exists("_tp_nograd"):
        registry.register(OpDef("_tp_nograd", lambda *a: None))
    x = var("x")
    y = op("_tp_nograd", x)
    with pytest.raises(MXNetError, match="_tp_nograd is non-differentiable"):
        gradient(Graph([y]), xs=[x], ys_out_grad=[var("h")])
    g = gradient(Graph([y]), xs=[x], ys_out_grad=[op("zeros_like", y)])
    z = g.outputs[0].node
    assert z.op.name == "zeros_like" and z.name.endswith("_backward") and z.control_deps == [y.node]


def test_input_without_gradient_gets_zeros_like():
    """An x whose only path returns no gradient (``None``) gets ``zeros_like(x)``."""
    x = var("x")
    y = op("zeros_like", x)    # zeros_like's gradient for its input is zero or missing
    g = gradient(Graph([y]), xs=[x], ys_out_grad=[var("h")])
    assert evaluate(g.outputs, {"x": np.ones(3), "h": np.ones(3)})[0].tolist() == [0, 0, 0]


def test_two_xs_sharing_a_gradient_get_a_copy():
    """When two xs would own the same entry, the second gets a ``_copy`` node of it."""
    x = var("x")
    y = op("tanh", x)
    g = gradient(Graph([y]), xs=[x, x], ys_out_grad=[var("h")])
    assert g.outputs[0].node is not g.outputs[1].node
    assert g.outputs[1].node.op.name == "_copy" and g.outputs[1].node.inputs[0] == g.outputs[0]


def test_mirror_feeds_recomputed_copies_to_backward():
    """Mirrored nodes are copied as ``<name>_mirror`` and only the copies are read by backward."""
    x = var("x")
    t = op("tanh", x, node_name="t")
    y = op("sigmoid", t, node_name="s")
    g = gradient(Graph([y]), xs=[x], ys_out_grad=[var("h")],
                 mirror_fun=lambda n: n.op.name in ("tanh", "sigmoid"))
    nodes = topo_sort(g.outputs)
    names = [n.name for n in nodes]
    assert "t_mirror" in names and "s_mirror" in names
    assert t.node not in nodes and y.node not in nodes, "backward reads no original forward node"
    mirror_t = next(n for n in nodes if n.name == "t_mirror")
    assert mirror_t.extra["mirror_of"] is t.node and mirror_t.inputs[0].node is x.node
    feed = {"x": np.linspace(-2, 2, 7), "h": np.ones(7)}
    plain = gradient(Graph([y]), xs=[x], ys_out_grad=[var("h")])
    np.testing.assert_allclose(evaluate(g.outputs, feed)[0], evaluate(plain.outputs, feed)[0])


def test_full_graph_appends_gradients_with_hinted_head_gradients():
    """full_graph = forward outputs + one gradient per x; heads read from ``_head_grad_<i>``."""
    x, w = var("x"), var("w")
    y = op("elemwise_mul", x, w)
    fg = full_graph([y], [x, w])
    assert fg.attrs["num_forward_outputs"] == 1 and len(fg.outputs) == 3
    assert [h.name for h in fg.attrs["head_grad_nodes"]] == ["_head_grad_0"]
    hints = [n for n in topo_sort(fg.outputs) if n.op is not None
             and n.op.name == "_identity_with_attr_like_rhs"]
    assert len(hints) == 1 and hints[0].name == "_head_grad_0_id"
    feed = {"x": np.arange(4.0), "w": np.full(4, 3.0), "_head_grad_0": np.ones(4)}
    out, dx, dw = evaluate(fg.outputs, feed)
    np.testing.assert_allclose(dx, feed["w"])
    np.testing.assert_allclose(dw, feed["x"])


def test_loss_layer_needs_no_head_gradient_in_graph():
    """SoftmaxOutput ignores its head gradient, so the hint node is not part of the training graph."""
    data, weight, label = var("data"), var("fc_weight"), var("label")
    fc = NodeEntry(make_node("FullyConnected", [data, weight], "fc", attrs={"num_hidden": "3",
                                                                          "no_bias": "True"}), 0, 0)
    out = NodeEntry(make_node("SoftmaxOutput", [fc, label], "softmax"), 0, 0)
    fg = full_graph([out], [weight])
    names = {n.name for n in topo_sort(fg.outputs)}
    assert "_head_grad_0" not in names and "_head_grad_0_id" not in names
    rng = np.random.default_rng(1)
    feed = {"data": rng.standard_normal((2, 4)), "fc_weight": rng.standard_normal((3, 4)),
            "label": np.array([0.0, 2.0])}
    prob, dw = evaluate(fg.outputs, feed)
    onehot = np.eye(3)[[0, 2]]
    np.testing.assert_allclose(dw, (prob - onehot).T @ feed["data"], rtol=1e-10)
    assert isinstance(fg.attrs["head_grad_nodes"][0], Node)


def test_zero_gradients_prune_the_backward_of_a_stopped_branch():
    """An op whose output gradients are all zeros gives zeros to its inputs without building its
    backward (MXNet's zero propagation): behind stop_gradient no _backward_mul is bound, so the
    executor allocates less; loss layers still start their own backward."""
    import re

    import mxref as mx
    data = mx.sym.Variable("data")
    for _ in range(4):
        data = data * data
    def total_mb(sym, shape):
        ex = sym.simple_bind(ctx=mx.cpu(), data=shape)
        return ex, int(re.search(r"Total (\d+) MB allocated", ex.debug_str()).group(1))

    _, big = total_mb(data, (10, 3, 128, 128))
    ex, small = total_mb(mx.sym.stop_gradient(data), (10, 3, 128, 128))
    assert "_backward_mul" not in ex.debug_str() and small < big
    ex, _ = total_mb(mx.sym.stop_gradient(data), (2, 3))
    ex.forward(is_train=True, data=mx.nd.ones((2, 3)))
    ex.backward(mx.nd.ones((2, 3)))
    assert not ex.grad_dict["data"].asnumpy().any()
    loss = mx.sym.MakeLoss(mx.sym.Variable("x") * 2)
    ex = loss.simple_bind(ctx=mx.cpu(), x=(2,))
    ex.forward(is_train=True, x=mx.nd.ones(2))
    ex.backward()
    assert ex.grad_dict["x"].asnumpy().tolist() == [2.0, 2.0]
