"""mirror: MXNet's MXNET_BACKWARD_DO_MIRROR rule, cut points, the budget and sublinear plans, memory."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_helpers import annotate, op, var
from test_pass_plan_memory import _check_invariants

from mxref.base import MXNetError
from mxref.graph import Graph, Node, NodeEntry, apply_pass, make_node
from mxref.passes.gradient import full_graph
from mxref.passes.memory_report import memory_report
from mxref.passes.mirror import (
    budget_plan,
    cut_points,
    mxnet_mirror_fun,
    need_mirror,
    product_macs,
    sublinear_plan,
)
from mxref.passes.plan_memory import EXTERNAL_STORAGE_ID, plan_memory
from mxref.symbol.eval_numpy import evaluate


def _node(op_name, **attrs):
    inputs = [var("a"), var("b"), var("c")][:1 if op_name not in ("FullyConnected", "SoftmaxOutput") else 2]
    if op_name == "FullyConnected":
        attrs.setdefault("num_hidden", "2")
        attrs.setdefault("no_bias", "True")
    return make_node(op_name, inputs, op_name.lower(), attrs=attrs)


@pytest.mark.parametrize("name,expected", [("Activation", True), ("FullyConnected", False),
                                           ("SoftmaxOutput", False), ("Dropout", False)])
def test_need_mirror_follows_mxnet(name, expected):
    """Expensive layers are kept, Dropout is never recomputed, cheap ops are."""
    attrs = {"act_type": "relu"} if name == "Activation" else {}
    assert need_mirror(_node(name, **attrs), True) is expected
    assert need_mirror(_node(name, **attrs), False) is False


def test_force_mirroring_attribute_wins():
    """``__force_mirroring__`` forces (or forbids) recomputation; never for Dropout or variables."""
    fc = _node("FullyConnected", __force_mirroring__="True")
    assert need_mirror(fc, False) is True
    act = _node("Activation", act_type="relu", __force_mirroring__="False")
    assert need_mirror(act, True) is False
    assert need_mirror(_node("Dropout", __force_mirroring__="True"), True) is False
    assert need_mirror(Node(None, "w"), True) is False


def test_env_flag_turns_mirroring_on(monkeypatch):
    act = _node("Activation", act_type="relu")
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    assert mxnet_mirror_fun()(act)
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "0")
    assert not mxnet_mirror_fun()(act)


def _chain(n, x=None):
    h = x or var("x")
    outs = []
    for i in range(n):
        h = op("sigmoid", h, node_name=f"s{i}")
        outs.append(h)
    return outs


def test_cut_points_skip_nodes_inside_a_residual_branch():
    """Every node of a chain is a cut point; nodes bypassed by a skip connection are not."""
    chain = _chain(4)
    assert [n.name for n in cut_points([chain[-1]])] == ["s0", "s1", "s2", "s3"]
    x = var("x")
    a = op("sigmoid", x, node_name="a")
    b = op("sigmoid", op("sigmoid", a, node_name="b1"), node_name="b2")
    out = op("sigmoid", op("elemwise_add", b, a, node_name="add"), node_name="out")
    assert [n.name for n in cut_points([out])] == ["a", "add", "out"]


def test_sublinear_plan_checkpoints_at_cut_points_past_the_threshold():
    """Threshold 0 keeps every cut point; a huge threshold mirrors every op."""
    chain = _chain(6)
    shapes = lambda e: (100,)
    assert sublinear_plan([chain[-1]], shapes, 0) == set()
    assert sublinear_plan([chain[-1]], shapes, 1e12) == {id(e.node) for e in chain}
    # 400 bytes per node: a checkpoint each time more than 1000 bytes accumulated (every 3rd node)
    kept = {id(e.node) for e in chain} - sublinear_plan([chain[-1]], shapes, 1000)
    assert kept == {id(chain[2].node), id(chain[5].node)}


def _training_plan(n, plan=None, everywhere=False):
    """Plan the training graph of an n-deep sigmoid chain; ``plan(chain)`` picks nodes to mirror."""
    x = var("x")
    chain = _chain(n, x)
    mirror_fun = None
    if plan is not None:
        chosen = plan(chain)
        mirror_fun = lambda node: id(node) in chosen
    fg = full_graph([chain[-1]], [x], mirror_fun=mirror_fun, mirror_everywhere=everywhere)
    g = annotate(fg.outputs, {"x": (1000,), "_head_grad_0": (1000,)})
    storage = [-1] * g.indexed.num_node_entries
    storage[g.indexed.entry_id(fg.outputs[1])] = EXTERNAL_STORAGE_ID
    g.attrs["storage"] = storage
    return fg, plan_memory(g)


def test_sublinear_mirroring_saves_memory_and_keeps_gradients():
    """A 16-deep sigmoid chain with a checkpoint every 4 nodes needs far fewer blocks, same gradient."""
    every_fourth = lambda chain: sublinear_plan([chain[-1]], lambda e: (1000,), 12000)
    fg_plain, plain = _training_plan(16)
    fg, mirrored = _training_plan(16, every_fourth, everywhere=True)
    before, after = memory_report(plain)["planned"], memory_report(mirrored)["planned"]
    assert after < 0.6 * before, (before, after)
    feed = {"x": np.linspace(-1, 1, 1000), "_head_grad_0": np.ones(1000)}
    np.testing.assert_allclose(evaluate(fg.outputs, feed)[1], evaluate(fg_plain.outputs, feed)[1])


def test_mxnet_rule_alone_reads_originals_in_other_backward_nodes():
    """Without mirror_everywhere a non-mirrored node's backward still reads original outputs."""
    x, y = var("x"), var("y")
    s = op("sigmoid", x, node_name="s")
    t = op("elemwise_mul", s, y, node_name="t")     # d/dy reads s
    only_sigmoid = lambda n: n.op is not None and n.op.name == "sigmoid"
    fg = full_graph([t], [x, y], mirror_fun=only_sigmoid)
    readers = [n for n in _nodes(fg) if any(e.node is s.node for e in n.inputs)]
    assert len(readers) > 1 and t.node in readers
    fg2 = full_graph([t], [x, y], mirror_fun=only_sigmoid, mirror_everywhere=True)
    readers2 = [n for n in _nodes(fg2) if any(e.node is s.node for e in n.inputs)]
    assert readers2 == [t.node], "only the forward tanh reads the original sigmoid output"


def _nodes(graph):
    return Graph(graph.outputs).indexed.nodes


def test_mirror_pass_attaches_policy_and_checks_arguments():
    x = var("x")
    out = _chain(3, x)[-1]
    g = apply_pass(Graph([out]), "mirror", mirror_policy="cheap")
    assert g.attrs["grad_mirror_everywhere"] is True and g.attrs["grad_mirror_fun"](out.node)
    g = apply_pass(Graph([out]), "mirror", mirror_policy="mxnet")
    assert g.attrs["grad_mirror_everywhere"] is False
    with pytest.raises(MXNetError, match="unknown mirror_policy 'all'"):
        apply_pass(Graph([out]), "mirror", mirror_policy="all")
    with pytest.raises(MXNetError, match="needs the 'shape' attribute"):
        apply_pass(Graph([out]), "mirror", mirror_policy="sublinear")
    shaped = annotate([out], {"x": (10,)})
    g = apply_pass(shaped, "mirror", mirror_policy="sublinear", threshold_bytes=1e12)
    assert g.attrs["grad_mirror_fun"](out.node) and g.attrs["grad_mirror_everywhere"]


# ---------------------------------------------------------------------------------------------
# The budget policy, on a small ResNet-like net
# ---------------------------------------------------------------------------------------------

_BN_VARS = ("gamma", "beta", "moving_mean", "moving_var")


def _conv_bn(x, name, nf, k):
    x = op("Convolution", x, var(name + "_w"), node_name=name, kernel=(k, k), pad=(k // 2, k // 2),
           num_filter=nf, no_bias=True)
    return op("BatchNorm", x, *[var(f"{name}_bn_{v}") for v in _BN_VARS], node_name=name + "_bn",
              fix_gamma=False)


def _relu(x, name):
    return op("Activation", x, node_name=name, act_type="relu")


def _resnet_like(units=3, c=8):
    """stem 3x3 conv (3 -> c), then ``units`` bottlenecks: 1x1 (c -> c/4), 3x3, 1x1 (-> c);
    every conv followed by BatchNorm (which keeps its input for backward, as in ResNet)."""
    h = _relu(_conv_bn(var("x"), "stem", c, 3), "stem_relu")
    for u in range(units):
        b = _relu(_conv_bn(h, f"u{u}_a", c // 4, 1), f"u{u}_ra")
        b = _relu(_conv_bn(b, f"u{u}_b", c // 4, 3), f"u{u}_rb")
        h = _relu(op("elemwise_add", _conv_bn(b, f"u{u}_c", c, 1), h, node_name=f"u{u}_add"), f"u{u}_out")
    return h


def _resnet_shapes(units=3, c=8, hw=6, batch=2):
    shapes = {"x": (batch, 3, hw, hw), "stem_w": (c, 3, 3, 3), "_head_grad_0": (batch, c, hw, hw)}
    for u in range(units):
        shapes.update({f"u{u}_a_w": (c // 4, c, 1, 1), f"u{u}_b_w": (c // 4, c // 4, 3, 3),
                       f"u{u}_c_w": (c, c // 4, 1, 1)})
    for name, w in list(shapes.items()):
        if name.endswith("_w"):
            shapes.update({f"{name[:-2]}_bn_{v}": (w[0],) for v in _BN_VARS})
    return shapes


def _shape_fn(out, var_shapes):
    g = annotate([out], var_shapes)
    return lambda e: g.attrs["shape"][g.indexed.entry_id(e)]


def _names(outputs, ids):
    return {n.name for n in Graph(outputs).indexed.nodes if id(n) in ids}


def test_product_macs_counts_multiply_adds_of_convolution_and_fully_connected():
    """Output elements times weight elements per output channel; 0 for other ops."""
    out = _resnet_like(units=1)
    shapes = _shape_fn(out, _resnet_shapes(units=1))
    nodes = {n.name: n for n in Graph([out]).indexed.nodes}
    assert product_macs(nodes["stem"], shapes) == 2 * 8 * 6 * 6 * (3 * 3 * 3)
    assert product_macs(nodes["u0_c"], shapes) == 2 * 8 * 6 * 6 * 2
    assert product_macs(nodes["u0_add"], shapes) == 0
    fc = op("FullyConnected", var("d"), var("w"), node_name="fc", num_hidden=5, no_bias=True)
    assert product_macs(fc.node, _shape_fn(fc, {"d": (4, 7), "w": (5, 7)})) == 4 * 5 * 7


def test_budget_plan_recomputes_the_cheapest_products_and_keeps_unit_outputs():
    """Per output element u*_c costs 2 multiply-adds, u*_a 8, u*_b 18, the stem 27: a 12% budget
    buys the three 1x1 expansions (3.8% each) and no more. Unit outputs read by the next unit stay
    (the last one has no reader but the loss, so it is recomputed); the cheap ops are recomputed."""
    out = _resnet_like()
    shapes = _shape_fn(out, _resnet_shapes())
    mirrored = _names([out], budget_plan([out], shapes, budget=0.12))
    units = [f"u{u}_{part}" for u in range(3) for part in ("c", "ra", "rb", "add", "a_bn", "b_bn", "c_bn")]
    assert mirrored == {"stem_bn", "u2_out", *units}
    assert _names([out], budget_plan([out], shapes, budget=0.0)) == mirrored - {"u0_c", "u1_c", "u2_c"}
    everything = _names([out], budget_plan([out], shapes, budget=1.0))
    assert everything == mirrored | {"u0_a", "u1_a", "u2_a", "u0_b", "u1_b", "u2_b", "stem"}


def test_budget_plan_obeys_force_mirroring():
    """``__force_mirroring__`` wins over the budget, both ways."""
    out = _resnet_like()
    nodes = {n.name: n for n in Graph([out]).indexed.nodes}
    nodes["u0_c"].attrs["__force_mirroring__"] = "False"
    nodes["u1_out"].attrs["__force_mirroring__"] = "True"
    mirrored = _names([out], budget_plan([out], _shape_fn(out, _resnet_shapes()), budget=0.12))
    assert "u0_c" not in mirrored and "u1_out" in mirrored and "u1_c" in mirrored


def _plan_training(out, mirror_fun, var_shapes):
    """Gradients of every weight (not of ``x``), planned with the executor's ``auto`` strategy."""
    weights = [NodeEntry(n, 0, 0) for n in _nodes(Graph([out]))
               if n.is_variable and n.name != "x" and "moving" not in n.name]
    fg = full_graph([out], weights, mirror_fun=mirror_fun, mirror_everywhere=mirror_fun is not None)
    g = annotate(fg.outputs, var_shapes)
    storage = [-1] * g.indexed.num_node_entries
    for e in fg.outputs[1:]:
        storage[g.indexed.entry_id(e)] = EXTERNAL_STORAGE_ID
    g.attrs["storage"] = storage
    return fg, plan_memory(g, strategy="auto")


def test_budget_mirroring_saves_memory_and_keeps_gradients_bit_for_bit():
    """Recomputing convolutions and the cheap ops gives the very same gradients, with less memory."""
    var_shapes = _resnet_shapes(units=4, c=16, hw=8)
    out = _resnet_like(units=4, c=16)
    chosen = budget_plan([out], _shape_fn(out, var_shapes), budget=0.15)
    fg_plain, plain = _plan_training(out, None, var_shapes)
    fg, mirrored = _plan_training(out, lambda n: id(n) in chosen, var_shapes)
    assert any(not n.is_variable and n.op.name == "Convolution" and "mirror_of" in n.extra
               for n in _nodes(fg))
    before, after = memory_report(plain)["planned"], memory_report(mirrored)["planned"]
    assert after < 0.8 * before, (before, after)
    _check_invariants(mirrored)
    rng = np.random.RandomState(0)
    feed = {k: rng.uniform(0.5 if "moving_var" in k else -1, 1, s).astype(np.float32)
            for k, s in var_shapes.items()}
    for a, b in zip(evaluate(fg.outputs, feed), evaluate(fg_plain.outputs, feed)):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------
# Invariant on random graphs: any mirror set gives the unmirrored gradients, and a valid plan
# ---------------------------------------------------------------------------------------------

_UNARY = ["sigmoid", "tanh", "relu"]


@st.composite
def random_mirror_cases(draw):
    """A recipe of unary ops, adds and products over earlier items, and a mirror flag per op."""
    n_vars = draw(st.integers(1, 3))
    recipe = []
    for _ in range(draw(st.integers(1, 16))):
        kind = draw(st.sampled_from(_UNARY + ["elemwise_add", "elemwise_mul", "FullyConnected"]))
        n_items = n_vars + len(recipe)
        recipe.append((kind, draw(st.integers(0, n_items - 1)), draw(st.integers(0, n_items - 1)),
                       draw(st.booleans())))
    return n_vars, recipe, draw(st.booleans()), draw(st.integers(0, 2 ** 31 - 1))


def _build_mirror_case(n_vars, recipe):
    """The recipe's last item and the ids of the op nodes flagged for mirroring."""
    items = [var(f"v{i}") for i in range(n_vars)]
    mirrored = set()
    for k, (kind, ia, ib, flag) in enumerate(recipe):
        if kind == "FullyConnected":   # (3, 4) x (4, 4)^T: every item stays (3, 4)
            e = op(kind, items[ia], var(f"w{k}"), node_name=f"n{k}", num_hidden=4, no_bias=True)
        elif kind in _UNARY:
            e = op(kind, items[ia], node_name=f"n{k}")
        else:
            e = op(kind, items[ia], items[ib], node_name=f"n{k}")
        if flag:
            mirrored.add(id(e.node))
        items.append(e)
    return items[-1], mirrored


@settings(max_examples=60, deadline=None, derandomize=True)
@given(random_mirror_cases())
def test_random_graphs_mirrored_gradients_equal_unmirrored(case):
    """Whatever nodes are mirrored, read everywhere or not, gradients are bit-for-bit the same."""
    n_vars, recipe, everywhere, seed = case
    out, mirrored = _build_mirror_case(n_vars, recipe)
    xs = [NodeEntry(n, 0, 0) for n in _nodes(Graph([out])) if n.is_variable]
    fg_plain = full_graph([out], xs)
    fg = full_graph([out], xs, mirror_fun=lambda n: id(n) in mirrored, mirror_everywhere=everywhere)
    rng = np.random.RandomState(seed)
    feed = {x.node.name: rng.uniform(-1, 1, (4, 4) if x.node.name[0] == "w" else (3, 4)).astype(np.float32)
            for x in xs}
    feed["_head_grad_0"] = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    for a, b in zip(evaluate(fg.outputs, feed), evaluate(fg_plain.outputs, feed)):
        np.testing.assert_array_equal(a, b)
    g = annotate(fg.outputs, {k: v.shape for k, v in feed.items()})
    _check_invariants(plan_memory(g))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(random_mirror_cases(), st.sampled_from([0.0, 0.2, 0.5, 1.0]))
def test_random_graphs_budget_plan_stays_within_budget_and_keeps_fanout_cut_points(case, budget):
    """Recomputed products cost at most ``budget`` of the forward's multiply-adds; a cut point read
    by two or more nodes is never recomputed; everything else cheap is."""
    n_vars, recipe, _, _ = case
    out, _ = _build_mirror_case(n_vars, recipe)
    var_shapes = {n.name: ((4, 4) if n.name[0] == "w" else (3, 4))
                  for n in _nodes(Graph([out])) if n.is_variable}
    shapes = _shape_fn(out, var_shapes)
    ops = [n for n in _nodes(Graph([out])) if not n.is_variable]
    mirrored = budget_plan([out], shapes, budget=budget)
    total = sum(product_macs(n, shapes) for n in ops)
    assert sum(product_macs(n, shapes) for n in ops if id(n) in mirrored) <= budget * total
    readers = {id(n): sum(any(e.node is n for e in m.inputs) for m in ops) for n in ops}
    cuts = {id(n) for n in cut_points([out])}
    for n in ops:
        fanout_cut = id(n) in cuts and readers[id(n)] >= 2
        if fanout_cut:
            assert id(n) not in mirrored, n.name
        elif n.op.name != "FullyConnected":
            assert id(n) in mirrored, n.name
