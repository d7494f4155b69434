"""Rearranging operators: ``khatri_rao``, ``depth_to_space``, ``space_to_depth`` and ``_split_v2``
(``mx.nd.split_v2``).

Math (``b`` is ``block_size``, layout NCHW)::

    khatri_rao(A_1, ..., A_n)[:, k] = A_1[:, k] (x) ... (x) A_n[:, k]   (column-wise Kronecker)
    depth_to_space: reshape (N, b, b, C/b^2, H, W), transpose (0, 3, 4, 1, 5, 2),
                    reshape (N, C/b^2, H b, W b)
    space_to_depth: reshape (N, C, H/b, b, W/b, b), transpose (0, 3, 5, 1, 2, 4),
                    reshape (N, C b^2, H/b, W/b)
    _split_v2(data, indices)[i] = data[indices[i] : indices[i+1]] along axis (the last to the end);
                    ``sections=s`` instead cuts s equal parts

Gradients: the two block permutations are each other's gradient; ``_split_v2``'s is
``_split_v2_backward``, the concatenation of the head gradients (zeros for unused outputs).
``khatri_rao`` has none in MXNet.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .elemwise import output_grads
from .registry import OpDef, Param, assign, register

# ---------------------------------------------------------------------------------------------
# khatri_rao
# ---------------------------------------------------------------------------------------------


def _khatri_rao_shape(p, in_shapes):
    if any(s is None for s in in_shapes):
        return list(in_shapes), [None]
    for s in in_shapes:
        if len(s) != 2 or s[1] != in_shapes[0][1]:
            raise MXNetError(f"khatri_rao: inputs must be matrices with the same number of columns, "
                             f"got shapes {[tuple(x) for x in in_shapes]}")
    return list(in_shapes), [(int(np.prod([s[0] for s in in_shapes])), in_shapes[0][1])]


def _khatri_rao(octx, p, inputs, outputs, req):
    out = inputs[0]
    for a in inputs[1:]:
        out = (out[:, None, :] * a[None, :, :]).reshape(-1, a.shape[1])
    assign(outputs[0], req[0], out)


register(OpDef("khatri_rao", _khatri_rao, arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])],
               params={"num_args": Param("int", doc="Number of input matrices.")},
               key_var_num_args="num_args",
               infer_shape=_khatri_rao_shape,
               doc="khatri_rao(*args): the column-wise Khatri-Rao product of the input matrices, shape "
                   "``(M_1 ... M_n, N)``."))


# ---------------------------------------------------------------------------------------------
# depth_to_space, space_to_depth
# ---------------------------------------------------------------------------------------------

_BLOCK = {"block_size": Param("int", doc="Blocks of [block_size, block_size] are moved.")}


def _block_shape(to_space: bool):
    op = "depth_to_space" if to_space else "space_to_depth"

    def infer(p, in_shapes):
        s, b = in_shapes[0], p["block_size"]
        if s is None:
            return list(in_shapes), [None]
        if len(s) != 4:
            raise MXNetError(f"{op}: data must be 4-D (N, C, H, W), got shape {tuple(s)}")
        if b <= 0:
            raise MXNetError(f"{op}: block_size must be positive, got {b}")
        if 0 in s:      # as MXNet, which reads 0 as an unknown dimension here
            raise MXNetError(f"{op}: data of shape {tuple(s)} has a zero dimension")
        n, c, h, w = s
        if to_space:
            if c % (b * b):
                raise MXNetError(f"{op}: channels {c} of shape {tuple(s)} are not a multiple of "
                                 f"block_size^2 = {b * b}")
            return list(in_shapes), [(n, c // (b * b), h * b, w * b)]
        if h % b or w % b:
            raise MXNetError(f"{op}: height and width of shape {tuple(s)} must be multiples of "
                             f"block_size {b}")
        return list(in_shapes), [(n, c * b * b, h // b, w // b)]
    return infer


def _depth_to_space(octx, p, inputs, outputs, req):
    x, b = inputs[0], p["block_size"]
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    assign(outputs[0], req[0], y.reshape(outputs[0].shape))


def _space_to_depth(octx, p, inputs, outputs, req):
    x, b = inputs[0], p["block_size"]
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    assign(outputs[0], req[0], y.reshape(outputs[0].shape))


def _inverse(op: str):
    def gradient(node, ograds):
        return [NodeEntry(make_node(op, [ograds[0]], node.name + "_backward", params=node.params), 0, 0)]
    return gradient


register(OpDef("depth_to_space", _depth_to_space, params=_BLOCK, infer_shape=_block_shape(True),
               gradient=_inverse("space_to_depth"), doc="depth_to_space(data, block_size): channels "
                                                        "moved into spatial blocks (see module docs)."))
register(OpDef("space_to_depth", _space_to_depth, params=_BLOCK, infer_shape=_block_shape(False),
               gradient=_inverse("depth_to_space"), doc="space_to_depth(data, block_size): spatial "
                                                        "blocks moved into channels (see module docs)."))


# ---------------------------------------------------------------------------------------------
# _split_v2
# ---------------------------------------------------------------------------------------------

_SPLIT_PARAMS = {"indices": Param("shape", doc="Start of each piece along axis."),
                 "axis": Param("int", 0, doc="The axis to split."),
                 "squeeze_axis": Param("bool", False, doc="Drop the split axis (pieces of length 1)."),
                 "sections": Param("int", 0, doc="Number of equal pieces (instead of indices).")}


def _num_pieces(p) -> int:
    return p["sections"] if p["sections"] > 0 else len(p["indices"])


def _bounds(p, shape):
    """``(axis, [(begin, end)] per piece)``; MXNetError for a bad axis or uneven sections."""
    if not -len(shape) <= p["axis"] < len(shape):
        raise MXNetError(f"split_v2: axis {p['axis']} out of range for data of shape {tuple(shape)}")
    axis = p["axis"] % len(shape)
    n = shape[axis]
    if p["sections"] > 0:
        if n % p["sections"]:
            raise MXNetError(f"split_v2: {p['sections']} sections do not divide axis {axis} of shape "
                             f"{tuple(shape)}")
        starts = [i * (n // p["sections"]) for i in range(p["sections"])]
    else:
        starts = [min(i, n) for i in p["indices"]]
    ends = starts[1:] + [n]
    return axis, [(b, max(b, e)) for b, e in zip(starts, ends)]


def _piece_shape(p, shape, axis, b, e):
    if p["squeeze_axis"]:
        if e - b != 1:
            raise MXNetError(f"split_v2: squeeze_axis needs pieces of length 1 on axis {axis}, got "
                             f"{e - b} from shape {tuple(shape)}")
        return tuple(shape[:axis]) + tuple(shape[axis + 1:])
    return tuple(shape[:axis]) + (e - b,) + tuple(shape[axis + 1:])


def _split_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return list(in_shapes), [None] * _num_pieces(p)
    axis, bounds = _bounds(p, s)
    return list(in_shapes), [_piece_shape(p, s, axis, b, e) for b, e in bounds]


def _split(octx, p, inputs, outputs, req):
    x = inputs[0]
    axis, bounds = _bounds(p, x.shape)
    for i, (b, e) in enumerate(bounds):
        assign(outputs[i], req[i], np.take(x, np.arange(b, e), axis=axis).reshape(outputs[i].shape))


def _split_backward(octx, p, inputs, outputs, req):
    axis, bounds = _bounds(p, outputs[0].shape)
    grad = np.zeros(outputs[0].shape, inputs[0].dtype)
    for g, (b, e) in zip(inputs, bounds):
        index = [slice(None)] * grad.ndim
        index[axis] = slice(b, e)
        grad[tuple(index)] = g.reshape(grad[tuple(index)].shape)
    assign(outputs[0], req[0], grad)


def _split_gradient(node, ograds):
    n = make_node("_split_v2_backward", output_grads(node, ograds) + [node.inputs[0]],
                  node.name + "_backward", params=node.params)
    return [NodeEntry(n, 0, 0)]


register(OpDef("_split_v2", _split, params=_SPLIT_PARAMS, aliases=("_npi_split",),
               outputs=lambda p: [f"output{i}" for i in range(_num_pieces(p))],
               infer_shape=_split_shape, infer_type=lambda p, t: (list(t), [t[0]] * _num_pieces(p)),
               gradient=_split_gradient,
               doc="_split_v2(data, indices, axis=0, squeeze_axis=False, sections=0): pieces of "
                   "``data`` starting at ``indices`` along ``axis`` (or ``sections`` equal ones)."))
register(OpDef("_split_v2_backward", _split_backward, params=_SPLIT_PARAMS,
               arguments=lambda p: [f"ograd{i}" for i in range(_num_pieces(p))] + ["data"],
               infer_shape=lambda p, s: (list(s), [s[-1]]),
               infer_type=lambda p, t: (list(t), [t[0]])))
