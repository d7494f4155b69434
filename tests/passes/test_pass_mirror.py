"""mirror: MXNet's MXNET_BACKWARD_DO_MIRROR rule, cut points, memonger's sublinear plan, memory effect."""
import numpy as np
import pytest
from passes_helpers import annotate, op, var

from mxref.base import MXNetError
from mxref.passes.base import Graph, apply_pass
from mxref.passes.gradient import full_graph
from mxref.passes.memory_report import memory_report
from mxref.passes.mirror import cut_points, mxnet_mirror_fun, need_mirror, sublinear_plan
from mxref.passes.plan_memory import EXTERNAL_STORAGE_ID, plan_memory
from mxref.symbol.eval_numpy import evaluate
from mxref.symbol.graph import Node, make_node


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
