"""count_flops: the example pass of docs/howto/add_a_graph_pass.md (FLOPs from inferred shapes)."""
import pathlib
import re

import pytest
from passes_helpers import annotate, var

from mxref.base import MXNetError
from mxref.graph import Graph, NodeEntry, apply_pass, make_node
from mxref.passes.gradient import full_graph


def _mlp():
    data, w, b = var("data"), var("fc_weight"), var("fc_bias")
    fc = NodeEntry(make_node("FullyConnected", [data, w, b], "fc", attrs={"num_hidden": "10"}), 0, 0)
    act = NodeEntry(make_node("Activation", [fc], "relu", attrs={"act_type": "relu"}), 0, 0)
    shapes = {"data": (4, 5), "fc_weight": (10, 5), "fc_bias": (10,)}
    return act, w, shapes


def test_forward_flops_of_fully_connected_and_activation():
    """FullyConnected: 2 * batch * num_hidden * in_dim; Activation: one per output element."""
    act, _, shapes = _mlp()
    g = apply_pass(annotate([act], shapes), "count_flops")
    assert g.attrs["total_flops"] == 2 * 4 * 10 * 5 + 4 * 10
    assert sorted(g.attrs["flops"]) == [0, 0, 0, 40, 400]


def test_backward_of_a_product_costs_twice_its_forward():
    act, w, shapes = _mlp()
    fg = full_graph([act], [w])
    g = apply_pass(annotate(fg.outputs, dict(shapes, _head_grad_0=(4, 10))), "count_flops")
    idx = g.indexed
    by_op = {n.op.name: g.attrs["flops"][nid] for nid, n in enumerate(idx.nodes) if n.op is not None}
    assert by_op["_backward_FullyConnected"] == 2 * by_op["FullyConnected"] == 800


def test_requires_shapes():
    act, _, _ = _mlp()
    with pytest.raises(MXNetError, match="requires attributes \\['shape'\\]"):
        apply_pass(Graph([act]), "count_flops")


def test_howto_quotes_the_real_code():
    """Every python block of docs/howto/add_a_graph_pass.md that shows the pass is in the file."""
    root = pathlib.Path(__file__).resolve().parents[2]
    doc = (root / "docs/howto/add_a_graph_pass.md").read_text()
    source = (root / "mxref/passes/count_flops.py").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    quoted = [b for b in blocks if "apply_pass(graph_with_shapes" not in b]
    assert len(quoted) == 4
    for block in quoted:
        assert block in source, f"the how-to quotes code the pass no longer has:\n{block}"
