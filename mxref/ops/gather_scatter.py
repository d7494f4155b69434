"""N-d gather and scatter: ``gather_nd``, ``scatter_nd``, ``_scatter_set_nd`` and ``_backward_gather_nd``.

``indices`` has shape ``(M, Y_0, ..., Y_{K-1})``: column ``y`` of it is one index into the first
``M`` axes of an array of shape ``(X_0, ..., X_{N-1})``::

    gather_nd(data, indices)[y, x_M, ...]             = data[indices[:, y], x_M, ...]
    scatter_nd(data, indices, shape)[indices[:, y], ...] = data[y, ...]    (zero elsewhere)
    _scatter_set_nd(lhs, rhs, indices)                 = lhs with the same entries set from rhs

so ``gather_nd`` gives shape ``(Y..., X_M, ..., X_{N-1})`` and ``scatter_nd`` takes it. Indices
truncate to integers; negative ones count from the end as in numpy (MXNet's gather does so too);
indices outside ``[-X_i, X_i)`` are an error raised by the kernel, an ``MXNetIndexError`` (both
``MXNetError`` and ``IndexError``, as MXNet's gather raises; MXNet's scatter writes out of
bounds). Duplicate indices in a scatter: the last write wins (MXNet: undefined).

Gradients: ``gather_nd``'s is ``_backward_gather_nd(g, indices, shape)``, a scatter that *adds* up
duplicates; ``scatter_nd``'s is ``gather_nd(g, indices)``; ``_scatter_set_nd`` passes ``g`` to
``lhs`` except at the set entries, and gathers it for ``rhs``. Indices get zero gradient.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError, MXNetIndexError
from ..graph import NodeEntry, make_node
from .elemwise import zero_grads
from .registry import OpDef, Param, assign, register


def _index_tuple(op: str, indices: np.ndarray, shape) -> tuple:
    """The ``M`` integer index arrays of ``indices`` (each of shape ``Y``), checked and wrapped."""
    m = indices.shape[0]
    idx = indices.astype(np.int64)
    out = []
    for i in range(m):
        n = shape[i]
        col = idx[i]
        if col.size and (col.min() < -n or col.max() >= n):
            bad = col[(col < -n) | (col >= n)].flat[0]
            raise MXNetIndexError(f"{op}: index {bad} is out of bounds for axis {i} with size {n}")
        out.append(np.where(col < 0, col + n, col))
    return tuple(out)


def _nd_shape(op: str, idx_shape, data_shape) -> tuple:
    if not idx_shape:
        raise MXNetError(f"{op}: indices must have at least one dimension, got shape {tuple(idx_shape)}")
    if idx_shape[0] > len(data_shape):
        raise MXNetError(f"{op}: {idx_shape[0]} indices per entry (indices shape {tuple(idx_shape)}) "
                         f"exceed the {len(data_shape)} dimensions of shape {tuple(data_shape)}")
    return tuple(idx_shape[1:]) + tuple(data_shape[idx_shape[0]:])


def _gather_shape(p, in_shapes):
    data, idx = in_shapes
    if data is None or idx is None:
        return list(in_shapes), [None]
    return list(in_shapes), [_nd_shape("gather_nd", idx, data)]


def _gather(octx, p, inputs, outputs, req):
    data, idx = inputs
    assign(outputs[0], req[0], data[_index_tuple("gather_nd", idx, data.shape)])


def _scatter_add(op: str, g: np.ndarray, idx: np.ndarray, shape, dtype) -> np.ndarray:
    out = np.zeros(shape, dtype)
    np.add.at(out, _index_tuple(op, idx, shape), g)
    return out


def _backward_gather(octx, p, inputs, outputs, req):
    g, idx = inputs
    assign(outputs[0], req[0], _scatter_add("_backward_gather_nd", g, idx, outputs[0].shape, g.dtype))


def _scatter_check(op: str, p, data, idx):
    if data is not None and idx is not None and tuple(data) != _nd_shape(op, idx, p["shape"]):
        raise MXNetError(f"{op}: data shape {tuple(data)} does not match indices {tuple(idx)} and "
                         f"shape {p['shape']} (expected {_nd_shape(op, idx, p['shape'])})")


def _scatter_shape(p, in_shapes):
    _scatter_check("scatter_nd", p, *in_shapes)
    return list(in_shapes), [tuple(p["shape"])]


def _scatter(octx, p, inputs, outputs, req):
    data, idx = inputs
    out = np.zeros(p["shape"], data.dtype)
    out[_index_tuple("scatter_nd", idx, p["shape"])] = data
    assign(outputs[0], req[0], out)


def _gather_node(node, g, idx, tag):
    return NodeEntry(make_node("gather_nd", [g, idx], node.name + tag), 0, 0)


def _gather_gradient(node, ograds):
    # The data's shape is known only once shapes are inferred: the backward node takes ``data``
    # as an input read for its shape only (MXNet passes it as the ``shape`` attribute).
    data, idx = node.inputs
    n = make_node("_backward_gather_nd_like", [ograds[0], idx, data], node.name + "_backward")
    n.control_deps.append(node)
    return [NodeEntry(n, 0, 0), zero_grads(node)[1]]


def _backward_gather_like(octx, p, inputs, outputs, req):
    g, idx, data = inputs
    assign(outputs[0], req[0], _scatter_add("gather_nd", g, idx, data.shape, g.dtype))


_SHAPE = {"shape": Param("shape", doc="Shape of the output.")}

register(OpDef("gather_nd", _gather, arguments=("data", "indices"), infer_shape=_gather_shape,
               infer_type=lambda p, t: (list(t), [t[0]]), gradient=_gather_gradient, doc=__doc__))
register(OpDef("_backward_gather_nd_like", _backward_gather_like, arguments=("ograd", "indices", "data"),
               infer_shape=lambda p, s: (list(s), [s[2]]), infer_type=lambda p, t: (list(t), [t[0]]),
               ignore_inputs=(2,),
               gradient=lambda node, og: [_gather_node(node, og[0], node.inputs[1], "_bwd"),
                                          *zero_grads(node)[1:]]))
register(OpDef("scatter_nd", _scatter, arguments=("data", "indices"), params=_SHAPE,
               infer_shape=_scatter_shape,
               infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=lambda node, og: [_gather_node(node, og[0], node.inputs[1], "_backward"),
                                          zero_grads(node)[1]],
               doc="scatter_nd(data, indices, shape): a zero array of ``shape`` with ``data`` at "
                   "``indices`` (see gather_nd)."))
register(OpDef("_backward_gather_nd", _backward_gather, arguments=("data", "indices"), params=_SHAPE,
               infer_shape=_scatter_shape, infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=lambda node, og: [_gather_node(node, og[0], node.inputs[1], "_backward"),
                                          zero_grads(node)[1]],
               doc="_backward_gather_nd(data, indices, shape): like scatter_nd, but duplicate "
                   "indices add up."))


# ---------------------------------------------------------------------------------------------
# _scatter_set_nd: lhs with the indexed entries replaced (MXNet writes into lhs: out=lhs)
# ---------------------------------------------------------------------------------------------

def _set_shape(p, in_shapes):
    lhs, rhs, idx = in_shapes
    shape = tuple(p["shape"])
    if lhs is not None and tuple(lhs) != shape:
        raise MXNetError(f"_scatter_set_nd: lhs shape {tuple(lhs)} differs from shape {shape}")
    _scatter_check("_scatter_set_nd", p, rhs, idx)
    return [shape, rhs, idx], [shape]


def _scatter_set(octx, p, inputs, outputs, req):
    lhs, rhs, idx = inputs
    where = _index_tuple("_scatter_set_nd", idx, lhs.shape)
    if req[0] == "add":
        new = lhs.copy()
        new[where] = rhs
        outputs[0] += new
    elif req[0] != "null":
        if outputs[0] is not lhs:
            outputs[0][...] = lhs
        outputs[0][where] = rhs


def _set_gradient(node, ograds):
    lhs, rhs, idx = node.inputs
    zeros = NodeEntry(make_node("zeros_like", [rhs], node.name + "_zeros"), 0, 0)
    kept = make_node("_scatter_set_nd", [ograds[0], zeros, idx], node.name + "_backward_lhs",
                     params=node.params)
    return [NodeEntry(kept, 0, 0), _gather_node(node, ograds[0], idx, "_backward_rhs"), zero_grads(node)[2]]


register(OpDef("_scatter_set_nd", _scatter_set, arguments=("lhs", "rhs", "indices"), params=_SHAPE,
               infer_shape=_set_shape, infer_type=lambda p, t: ([t[0], t[0], t[2]], [t[0]]),
               inplace=[(0, 0)], gradient=_set_gradient, aliases=("_npi_scatter_set_nd",),
               doc="_scatter_set_nd(lhs, rhs, indices, shape): ``lhs`` with ``lhs[indices[:, y]] = "
                   "rhs[y]``; MXNet calls it with ``out=lhs`` to assign in place."))
