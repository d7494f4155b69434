"""Small operators and helpers shared by the pass tests (registered once, names prefixed ``_tp_``)."""
from __future__ import annotations

import numpy as np

from mxref.graph import Graph, Node, NodeEntry, make_node
from mxref.ops import registry
from mxref.ops.registry import OpDef, Param


def _copy(octx, params, inputs, outputs, req):
    registry.assign(outputs[0], req[0], inputs[0])


def _resize_shape(params, in_shapes):
    return in_shapes, [(params["n"],)]


def _split_shape(params, in_shapes):
    return in_shapes, [in_shapes[0], in_shapes[0]]


def _register_once(opdef):
    if not registry.exists(opdef.name):
        registry.register(opdef)


_register_once(OpDef("_tp_inplace", _copy, inplace=[(0, 0)]))
_register_once(OpDef("_tp_plain", _copy))
_register_once(OpDef("_tp_add", _copy, arguments=("lhs", "rhs"), inplace=[(0, 0), (1, 0)]))
_register_once(OpDef("_tp_ident", _copy, inplace=[(0, 0)], inplace_identity=[True]))
_register_once(OpDef("_tp_zeros_like", _copy, ignore_inputs=[0]))
_register_once(OpDef("_tp_resize", _copy, infer_shape=_resize_shape,
                     params={"n": Param("int")}))
_register_once(OpDef("_tp_split", _copy, outputs=("a", "b"), infer_shape=_split_shape,
                     inplace=[(0, 0)]))


def var(name: str) -> NodeEntry:
    return NodeEntry(Node(None, name), 0, 0)


def op(name: str, *inputs: NodeEntry, node_name: str = None, **params) -> NodeEntry:
    return NodeEntry(make_node(name, list(inputs), node_name or f"{name}{id(inputs)}",
                               params=registry.get(name).parse_params(params)), 0, 0)


def annotate(outputs, var_shapes, dtype=np.float32) -> Graph:
    """A ``Graph`` with "shape" and "dtype" filled by running each op's ``infer_shape`` forward."""
    g = Graph(outputs)
    idx = g.indexed
    shape = [None] * idx.num_node_entries
    for nid, n in enumerate(idx.nodes):
        if n.is_variable:
            shape[idx.entry_id(nid, 0)] = tuple(var_shapes[n.name])
            continue
        _, outs = n.op.infer_shape(n.params, [shape[idx.entry_id(e)] for e in n.inputs])
        for i, s in enumerate(outs):
            shape[idx.entry_id(nid, i)] = tuple(s)
    g.attrs["shape"] = shape
    g.attrs["dtype"] = [np.dtype(dtype)] * idx.num_node_entries
    return g
