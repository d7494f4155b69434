"""Graph pass infer_shape: forward and backward sweeps, weights from data, hints, the
`output_like` hook, unknown counts, and errors that name the node, operator and shapes."""
import warnings

import numpy as np
import pytest

import mxref.name
import mxref.passes.infer_shape  # noqa: F401 - registers the pass
import mxref.symbol as sym
from mxref.base import MXNetError
from mxref.graph import Graph, NodeEntry, apply_pass, list_passes
from mxref.ops.registry import OpDef, Param, exists, register
from mxref.passes.infer_shape import merge_shape


def _dense_shape(p, ins):
    if ins[0] is None:
        return list(ins), [None]
    n = p["num_hidden"]
    return [ins[0], (n, int(np.prod(ins[0][1:]))), (n,)], [(ins[0][0], n)]


if not exists("TShapeDense"):
    register(OpDef("TShapeDense", arguments=("data", "weight", "bias"), infer_shape=_dense_shape,
                   params={"num_hidden": Param("int")}))
    register(OpDef("TShapeAdd", arguments=("lhs", "rhs")))
    register(OpDef("TShapeRelu"))
    register(OpDef("TShapeFragile", infer_shape=lambda p, ins: ([ins[0]], [(ins[0][0] * 2,)])))


@pytest.fixture(autouse=True)
def fresh_names():
    with mxref.name.NameManager():
        yield


def _run(s, **shapes):
    g = apply_pass(Graph(s._outputs), "infer_shape", shape_inputs=shapes)
    return g, {n: g.attrs["shape"][g.indexed.entry_id(e)]
               for n, e in zip(s.get_internals().list_outputs(), s.get_internals()._outputs)}


def test_pass_is_registered_with_what_it_provides():
    """The pass declares its outputs, as every mxref pass does."""
    info = list_passes()["infer_shape"]
    assert info.provides == ("shape", "shape_num_unknown_nodes") and info.requires == ()


def test_weights_are_inferred_from_data():
    """An op rule fills in unknown inputs: weight and bias follow from data and num_hidden."""
    net = sym.TShapeDense(sym.Variable("data"), num_hidden=10, name="fc1")
    g, shapes = _run(net, data=(4, 5))
    assert shapes == {"data": (4, 5), "fc1_weight": (10, 5), "fc1_bias": (10,), "fc1_output": (4, 10)}
    assert g.attrs["shape_num_unknown_nodes"] == 0


def test_backward_sweep_carries_an_output_shape_to_an_input():
    """relu(x) + w with only w known: x is found by the backward sweep through relu."""
    x, w = sym.Variable("x"), sym.Variable("w")
    net = sym.TShapeAdd(sym.TShapeRelu(x), w)
    _, shapes = _run(net, w=(3, 2))
    assert shapes["x"] == (3, 2) and shapes["tshapeadd0_output"] == (3, 2)


def test_hints_partial_shapes_and_unknown_count():
    """__shape__ hints are used, 0 dims are filled in, the user's shape wins over a partial hint."""
    v = sym.Variable("v", shape=(0, 4))
    g, shapes = _run(sym.TShapeRelu(v))
    assert shapes["v"] == (0, 4) and g.attrs["shape_num_unknown_nodes"] == 2
    assert _run(sym.TShapeRelu(v), v=(5, 4))[1]["v"] == (5, 4)
    assert sym.Variable("k", shape=(3,)).infer_shape() == ([(3,)], [(3,)], [])


def test_inputs_may_be_a_list_in_input_node_order_and_graph_attrs_seed():
    """shape_inputs also works as a list aligned with indexed.input_nodes, or from graph.attrs."""
    net = sym.TShapeDense(sym.Variable("data"), num_hidden=2, name="fc")
    g = apply_pass(Graph(net._outputs), "infer_shape", shape_inputs=[(3, 7), None, None])
    assert g.attrs["shape"][g.indexed.entry_id(net._outputs[0])] == (3, 2)
    g2 = Graph(net._outputs, attrs={"shape_inputs": {"data": (1, 1)}})
    assert apply_pass(g2, "infer_shape").attrs["shape_num_unknown_nodes"] == 0


def test_inconsistent_shapes_name_node_op_and_shapes():
    """A contradiction names the node, the operator, the input and both shapes."""
    net = sym.TShapeDense(sym.Variable("data"), num_hidden=10, name="fc1")
    with pytest.raises(MXNetError, match=r"fc1 \(TShapeDense\): input 'weight' has shape \(3, 5\) "
                                         r"but \(10, 5\) is inferred"):
        net.infer_shape(data=(4, 5), fc1_weight=(3, 5))
    with pytest.raises(MXNetError, match="infer_shape error. Arguments:\n  data: "):
        net.infer_shape(data=(4, 5), fc1_weight=(3, 5))


def test_rules_that_cannot_handle_unknown_inputs_wait_for_them():
    """A rule that fails on an unknown input is retried later; on known inputs it is an error."""
    net = sym.TShapeFragile(sym.Variable("a"))
    assert net.infer_shape_partial() == ([()], [()], [])
    assert net.infer_shape(a=(3,))[1] == [(6,)]


def test_output_like_hook_copies_shapes_both_ways():
    """A node marked extra['output_like'] mirrors the listed entries (how gradients get shapes)."""
    x, y = sym.Variable("x"), sym.Variable("y")
    fwd = sym.TShapeRelu(x)
    grad = sym.TShapeAdd(fwd, y)
    grad._outputs[0].node.extra["output_like"] = [NodeEntry(x._outputs[0].node, 0, 0)]
    _, shapes = _run(sym.Group([grad, fwd]), x=(2, 2))
    assert shapes["tshapeadd0_output"] == (2, 2)
    _, shapes = _run(sym.Group([grad, fwd]))
    assert shapes["x"] is None


def test_symbol_front_end_incomplete_and_partial():
    """infer_shape warns and returns Nones when undecided; infer_shape_partial shows () instead."""
    net = sym.TShapeDense(sym.Variable("data"), num_hidden=3, name="fc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert net.infer_shape() == (None, None, None)
    assert "Cannot decide shape for the following arguments" in str(caught[0].message)
    assert "\tdata: ()" in str(caught[0].message)
    assert net.infer_shape_partial(fc_weight=(3, 4)) == ([(), (3, 4), ()], [()], [])
    assert net.infer_shape((2, 4))[0] == [(2, 4), (3, 4), (3,)]
    with pytest.raises(MXNetError, match="'nope' is not an input"):
        net.infer_shape(nope=(1,))
    with pytest.raises(ValueError):
        net.infer_shape((2, 4), data=(2, 4))
    with pytest.raises(MXNetError, match="tuple of ints"):
        net.infer_shape(data="2x4")


def test_merge_shape():
    """Unknown dims (0) merge with known ones; rank or value disagreements raise ValueError."""
    assert merge_shape(None, (2, 0)) == (2, 0) and merge_shape((0, 3), (2, 0)) == (2, 3)
    for a, b in (((2,), (2, 1)), ((2, 3), (2, 4))):
        with pytest.raises(ValueError):
            merge_shape(a, b)


def test_a_node_filled_in_by_its_neighbours_still_checks_its_shapes():
    """transpose(v) + (x + v) with v of shape (2, 3): the sum fills in transpose's output as (2, 3)
    before transpose has seen v; one more sweep (as MXNet's InferAttr does) lets it object."""
    v, x = sym.Variable("V"), sym.Variable("x")
    net = sym.transpose(v) + (x + v)
    with pytest.raises(MXNetError, match=r"transpose.*\(2, 3\) but \(3, 2\) is inferred"):
        net.infer_shape(x=(2, 3))
    assert (sym.transpose(v) + v).infer_shape_partial(V=(3, 3))[1] == [(3, 3)]


def _arg_shapes(sym):
    import mxref as mx  # noqa: F401
    arg_shapes, _, _ = sym.infer_shape()
    return dict(zip(sym.list_arguments(), arg_shapes))


def test_known_output_fills_slice_channel_input():
    """SliceChannel: a known part gives the input its other dims and its split axis."""
    import mxref as mx
    a = mx.sym.Variable("a", shape=(0, 10))
    b = mx.sym.SliceChannel(data=a, num_outputs=10, axis=1, squeeze_axis=True)
    assert _arg_shapes(b[1] + mx.sym.Variable("c", shape=(5,)))["a"] == (5, 10)
    a = mx.sym.Variable("a", shape=(0, 15, 0))
    b = mx.sym.SliceChannel(data=a, num_outputs=3, squeeze_axis=False)
    assert _arg_shapes(b[1] + mx.sym.Variable("c", shape=(3, 5, 2)))["a"] == (3, 15, 2)


def test_known_output_fills_convolution_data():
    """Convolution: the batch size always, spatial sizes where the stride is 1."""
    import mxref as mx
    a = mx.sym.Variable("a", shape=(0, 10, 0, 0))
    b = mx.sym.Convolution(data=a, num_filter=21, kernel=(3, 3), dilate=(2, 1), pad=(1, 1))
    shapes = _arg_shapes(b + mx.sym.Variable("c", shape=(5, 21, 30, 32)))
    assert shapes["a"] == (5, 10, 32, 32) and shapes["convolution0_weight"] == (21, 10, 3, 3)
    strided = mx.sym.Convolution(data=mx.sym.Variable("a", shape=(0, 10, 0, 0)), num_filter=4,
                                 kernel=(3, 3), stride=(2, 2))
    _, _, _ = strided.infer_shape_partial()
    arg, _, _ = (strided + mx.sym.Variable("c", shape=(5, 4, 7, 7))).infer_shape_partial()
    assert arg[0] == (5, 10, 0, 0)       # stride 2: the input size is ambiguous, left unknown


def test_known_output_fills_concat_inputs():
    """Concat: dims off the axis from the output; the one unknown axis size is what is left."""
    import mxref as mx
    a = mx.sym.Variable("a", shape=(0, 10))
    b = mx.sym.Variable("b", shape=(0, 0))
    c = mx.sym.Concat(a, b, num_args=2, dim=1)
    shapes = _arg_shapes(mx.sym.Variable("d", shape=(2, 15)) + c)
    assert shapes == {"d": (2, 15), "a": (2, 10), "b": (2, 5)}


def test_np_shape_semantics_at_the_symbol_boundary():
    """Under np_shape, -1 is an unknown dim (in and out) and an unknown shape is None; in legacy
    semantics they are 0 and ()."""
    import mxref as mx
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    z = mx.sym.dot(x, y)
    assert z.infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    assert mx.sym.sin(x).infer_shape_partial()[0] == [()]
    with mx.np_shape(True):
        assert z.infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
        assert mx.sym.sin(x).infer_shape_partial() == ([None], [None], [])
        assert z.infer_shape(x=(2, 3, 4), y=(4, 5))[1] == [(2, 3, 5)]


def test_where_waits_for_a_known_condition_and_batch_dot_for_inner_sizes():
    """where infers nothing while the condition's shape has unknown dims (MXNet's WhereOpShape);
    batch_dot nothing while an inner (contracted) size is unknown."""
    import mxref as mx
    w = mx.sym.where(mx.sym.Variable("c"), mx.sym.Variable("x"), mx.sym.Variable("y"))
    assert w.infer_shape_partial(c=(0, 2), x=(0, 2), y=(0, 2))[1] == [()]
    assert w.infer_shape_partial(c=(3, 2), x=(0, 2), y=(0, 2))[1] == [(3, 2)]
    b = mx.sym.batch_dot(mx.sym.Variable("x"), mx.sym.Variable("y"))
    assert b.infer_shape_partial(x=(0, 3, 4), y=(0, 4, 5))[1] == [(0, 3, 5)]
    assert b.infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))[1] == [()]


def test_convolution_weight_with_unknown_channels():
    """Data of unknown channel count: the weight is (num_filter, 0, *kernel), as MXNet."""
    import mxref as mx
    data = mx.sym.Variable("data", shape=(1, 0, 0, 0))
    conv = mx.sym.Convolution(data=mx.sym.cast(data, dtype="float16"), weight=mx.sym.Variable("weight"),
                              pad=(3, 3), num_filter=64, stride=(2, 2), no_bias=True, kernel=(7, 7))
    arg, _, _ = conv.infer_shape_partial()
    assert dict(zip(conv.list_arguments(), arg)) == {"data": (1, 0, 0, 0), "weight": (64, 0, 7, 7)}
