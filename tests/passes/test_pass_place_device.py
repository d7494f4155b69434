"""Graph pass ``place_device`` on its own: devices per node, one copy per (entry, destination),
ungrouped nodes on the default context, unmapped groups refused."""
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.graph import Graph, apply_pass


def graph_of(sym):
    return Graph(list(sym._outputs))


def test_devices_and_copies_of_a_forward_graph():
    x = mx.sym.Variable("x")
    with mx.AttrScope(ctx_group="a"):
        h = mx.sym.tanh(x, name="h")
    with mx.AttrScope(ctx_group="b"):
        y1, y2 = mx.sym.sin(h, name="s"), mx.sym.cos(h, name="c")
    z = mx.sym.elemwise_add(y1, y2, name="z")          # ungrouped: the default context
    g = apply_pass(graph_of(z), "place_device", group2ctx={"a": mx.cpu(1), "b": mx.cpu(2)},
                   default_ctx=mx.cpu(0))
    idx = g.indexed
    where = {n.name: g.attrs["device_ctx"][d] for n, d in zip(idx.nodes, g.attrs["device"])}
    assert where["h"] == mx.cpu(1) and where["s"] == where["c"] == mx.cpu(2)
    assert where["z"] == mx.cpu(0) and where["x"] == mx.cpu(1)        # x lives with its reader
    assert g.attrs["device_ctx"][0] == mx.cpu(0)
    copies = sorted((n.inputs[0].node.name, n.params["dst"]) for n in idx.nodes
                    if not n.is_variable and n.op.name == "_CrossDeviceCopy")
    assert copies == [("c", "cpu(0)"), ("h", "cpu(2)"), ("s", "cpu(0)")]
    assert g.attrs["num_copies"] == 3


def test_unmapped_group_names_the_node_and_the_mapped_groups():
    with mx.AttrScope(ctx_group="enc"):
        y = mx.sym.tanh(mx.sym.Variable("x"), name="t")
    with pytest.raises(MXNetError, match="node 't' has ctx_group 'enc'.*\\['dec'\\]"):
        apply_pass(graph_of(y), "place_device", group2ctx={"dec": mx.cpu(1)}, default_ctx=mx.cpu(0))


def test_no_group2ctx_puts_everything_on_the_default_context():
    with mx.AttrScope(ctx_group="enc"):
        y = mx.sym.tanh(mx.sym.Variable("x"), name="t")
    g = apply_pass(graph_of(y), "place_device", group2ctx={}, default_ctx=mx.cpu(3))
    assert g.attrs["device_ctx"] == [mx.cpu(3)] and set(g.attrs["device"]) == {0}
    assert g.attrs["num_copies"] == 0
