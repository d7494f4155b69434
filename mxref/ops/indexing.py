"""Index-driven operators: ``take``, ``pick``, ``one_hot``, ``where`` and ``clip``.

Indices arrive as arrays of any dtype (usually float32) and are truncated to integers. Out-of-range
indices follow ``mode``: ``'clip'`` (default) clamps to the valid range, ``'wrap'`` wraps around,
``'raise'`` is an error; ``one_hot`` gives an all-``off_value`` row for them.

Gradients: ``take``/``pick`` scatter-add the head gradient back to the rows they read; ``where``
routes it to ``x`` where the condition holds and to ``y`` elsewhere; ``clip`` passes it where
``a_min <= x <= a_max``. Indices and conditions get zero gradient.
"""
from __future__ import annotations

import numpy as np

from .._ext import loader
from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .elemwise import zero_grads
from .parallel import parallel_elementwise
from .registry import OpDef, Param, assign, register, register_kernel


def _indices(op: str, idx: np.ndarray, n: int, mode: str) -> np.ndarray:
    idx = idx.astype(np.int64)
    if mode == "wrap":
        return np.mod(idx, n)
    if mode == "raise" and idx.size and (idx.min() < 0 or idx.max() >= n):
        raise MXNetError(f"{op}: index out of range [0, {n}) with mode='raise'")
    return np.clip(idx, 0, n - 1)


def _two_outputs(node, bname: str, inputs):
    n = make_node(bname, inputs, node.name + "_backward", params=node.params)
    return [NodeEntry(n, 0, 0), NodeEntry(n, 1, 0)]


def _backward_shapes(params, in_shapes):
    return list(in_shapes), [in_shapes[1], in_shapes[2]]


def _backward_types(params, in_types):
    return list(in_types), [in_types[0], in_types[2]]


# ---------------------------------------------------------------------------------------------
# take
# ---------------------------------------------------------------------------------------------

_TAKE_PARAMS = {"axis": Param("int", 0), "mode": Param("str", "clip", choices=("clip", "raise", "wrap"))}


def _take_shape(params, in_shapes):
    a, idx = in_shapes
    if a is None or idx is None:
        return list(in_shapes), [None]
    if not -len(a) <= params["axis"] < len(a):
        raise MXNetError(f"take: axis {params['axis']} out of range for shape {tuple(a)}")
    axis = params["axis"] % len(a)
    return list(in_shapes), [tuple(a[:axis]) + tuple(idx) + tuple(a[axis + 1:])]


def _take_kernel(octx, params, inputs, outputs, req):
    a, idx = inputs
    axis = params["axis"] % a.ndim
    assign(outputs[0], req[0], np.take(a, _indices("take", idx, a.shape[axis], params["mode"]), axis=axis))


def _take_backward(octx, params, inputs, outputs, req):
    g, a, idx = inputs
    axis = params["axis"] % a.ndim
    ii = _indices("take", idx, a.shape[axis], params["mode"]).reshape(-1)
    moved = np.moveaxis(g.reshape(a.shape[:axis] + (ii.size,) + a.shape[axis + 1:]), axis, 0)
    grad = np.zeros((a.shape[axis],) + moved.shape[1:], dtype=g.dtype)
    np.add.at(grad, ii, moved)
    assign(outputs[0], req[0], np.moveaxis(grad, 0, axis))
    assign(outputs[1], req[1], 0)


register(OpDef("take", _take_kernel, arguments=("a", "indices"), params=_TAKE_PARAMS,
               infer_shape=_take_shape, infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=lambda node, og: _two_outputs(node, "_backward_take", [og[0], *node.inputs]),
               doc="take(a, indices, axis=0, mode='clip'): elements of ``a`` at ``indices`` on ``axis``."))
register(OpDef("_backward_take", _take_backward, arguments=("ograd", "a", "indices"), params=_TAKE_PARAMS,
               outputs=("a_grad", "indices_grad"), infer_shape=_backward_shapes,
               infer_type=_backward_types, ignore_inputs=(1,)))


# ---------------------------------------------------------------------------------------------
# pick
# ---------------------------------------------------------------------------------------------

_PICK_PARAMS = {"axis": Param("int_or_none", -1), "keepdims": Param("bool", False),
                "mode": Param("str", "clip", choices=("clip", "wrap"))}


def _pick_axis(params, ndim: int) -> int:
    axis = params["axis"]
    if axis is None or not -ndim <= axis < ndim:
        raise MXNetError(f"pick: axis {axis} out of range for {ndim}-d data")
    return axis % ndim


def _pick_shape(params, in_shapes):
    data = in_shapes[0]
    if data is None:
        return list(in_shapes), [None]
    axis = _pick_axis(params, len(data))
    kept = tuple(1 if i == axis else d for i, d in enumerate(data))
    out = kept if params["keepdims"] else tuple(d for i, d in enumerate(data) if i != axis)
    idx = in_shapes[1]
    if idx is not None and tuple(idx) not in (out, kept, tuple(d for i, d in enumerate(data) if i != axis)):
        raise MXNetError(f"pick: index shape {tuple(idx)} does not match data {tuple(data)} on axis {axis}")
    return [data, idx if idx is not None else out], [out]


def _pick_index(params, data, index):
    axis = _pick_axis(params, data.ndim)
    kept = tuple(1 if i == axis else d for i, d in enumerate(data.shape))
    return axis, _indices("pick", index, data.shape[axis], params["mode"]).reshape(kept)


def _pick_kernel(octx, params, inputs, outputs, req):
    data, index = inputs
    axis, ii = _pick_index(params, data, index)
    assign(outputs[0], req[0], np.take_along_axis(data, ii, axis).reshape(outputs[0].shape))


def _pick_backward(octx, params, inputs, outputs, req):
    g, data, index = inputs
    axis, ii = _pick_index(params, data, index)
    grad = np.zeros(data.shape, dtype=g.dtype)
    np.put_along_axis(grad, ii, g.reshape(ii.shape), axis)   # one pick per row: no collisions
    assign(outputs[0], req[0], grad)
    assign(outputs[1], req[1], 0)


register(OpDef("pick", _pick_kernel, arguments=("data", "index"), params=_PICK_PARAMS,
               aliases=("choose_element_0index",), infer_shape=_pick_shape,
               infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=lambda node, og: _two_outputs(node, "_backward_pick", [og[0], *node.inputs]),
               doc="pick(data, index, axis=-1, keepdims=False, mode='clip'): one element per row."))
register(OpDef("_backward_pick", _pick_backward, arguments=("ograd", "data", "index"), params=_PICK_PARAMS,
               outputs=("data_grad", "index_grad"), infer_shape=_backward_shapes,
               infer_type=_backward_types, ignore_inputs=(1,)))


# ---------------------------------------------------------------------------------------------
# one_hot, where, clip
# ---------------------------------------------------------------------------------------------

def _one_hot_kernel(octx, params, inputs, outputs, req):
    idx = inputs[0].astype(np.int64)
    depth = params["depth"]
    hot = (idx[..., None] == np.arange(depth)) & (idx[..., None] >= 0)
    assign(outputs[0], req[0], np.where(hot, params["on_value"], params["off_value"]))


register(OpDef("one_hot", _one_hot_kernel, arguments=("indices",),
               params={"depth": Param("int"), "on_value": Param("float", 1.0),
                       "off_value": Param("float", 0.0), "dtype": Param("dtype", np.dtype(np.float32))},
               infer_shape=lambda p, s: (list(s), [None if s[0] is None else tuple(s[0]) + (p["depth"],)]),
               infer_type=lambda p, t: (list(t), [p["dtype"]]), gradient=zero_grads,
               doc="one_hot(indices, depth, on_value=1, off_value=0, dtype='float32')."))


def _where_shape(params, in_shapes):
    cond, x, y = in_shapes
    if cond is None or 0 in cond:
        # As MXNet's WhereOpShape: nothing is inferred until the condition's shape is fully known
        # (it decides between the same-shape and the 1-d row-selecting forms).
        return list(in_shapes), [None]
    known = x if x is not None else y
    if x is not None and y is not None:
        # 0 is an unknown dimension (a begin state of batch 0 in a symbolic RNN unroll).
        if len(x) != len(y) or any(a and b and a != b for a, b in zip(x, y)):
            raise MXNetError(f"where: x {tuple(x)} and y {tuple(y)} must have the same shape")
        known = tuple(a or b for a, b in zip(x, y))
    if known is None or (len(cond) == 1 and len(known) != 1):
        rows_ok = known is None or not known or known[0] in (0, cond[0])
    else:
        rows_ok = False
    if known is not None and len(cond) == len(known):
        if any(a and b != a for a, b in zip(known, cond)):
            raise MXNetError(f"where: condition {tuple(cond)} must have the shape of x {tuple(known)} "
                             "or be 1-d with its first dimension")
        known = tuple(cond)     # the condition is fully known: it fills x's unknown dims
    elif not rows_ok:
        raise MXNetError(f"where: condition {tuple(cond)} must have the shape of x {tuple(known)} "
                         "or be 1-d with its first dimension")
    elif known is not None and known and not known[0]:
        known = (cond[0],) + tuple(known[1:])
    return [cond, known, known], [known]


def _where_kernel(octx, params, inputs, outputs, req):
    cond, x, y = inputs
    mask = cond != 0
    if mask.shape != x.shape:   # a 1-d condition selects whole rows
        mask = mask.reshape(mask.shape + (1,) * (x.ndim - 1))
    assign(outputs[0], req[0], np.where(mask, x, y))


def _where_grad(node, ograds):
    cond = node.inputs[0]
    zeros = NodeEntry(make_node("zeros_like", [ograds[0]], node.name + "_zeros"), 0, 0)
    gx = make_node("where", [cond, ograds[0], zeros], node.name + "_backward_x")
    gy = make_node("where", [cond, zeros, ograds[0]], node.name + "_backward_y")
    return [zero_grads(node)[0], NodeEntry(gx, 0, 0), NodeEntry(gy, 0, 0)]


def _where_type(params, in_types):
    x = in_types[1] if in_types[1] is not None else in_types[2]
    return [in_types[0], x, x], [x]


register(OpDef("where", _where_kernel, arguments=("condition", "x", "y"), infer_shape=_where_shape,
               infer_type=_where_type, gradient=_where_grad,
               doc="where(condition, x, y): ``x`` where condition is non-zero, else ``y``."))

_CLIP_PARAMS = {"a_min": Param("float"), "a_max": Param("float")}


def _clip_kernel(octx, params, inputs, outputs, req):
    x, out, lo, hi = inputs[0], outputs[0], params["a_min"], params["a_max"]
    if req[0] in ("write", "inplace") and x.dtype.kind == "f" and out.dtype == x.dtype:
        # Straight into the output (no temporary to copy), a range per operator thread (ReLU6
        # of MobileNet's activations); np.clip's own bits either way. 'inplace' (the memory
        # planner gave the output the input's memory) is the same: each element is read before
        # it is written, by the same thread.
        parallel_elementwise(lambda a, o: np.clip(a, lo, hi, out=o), x, out)
    else:
        assign(out, req[0], np.clip(x, lo, hi))


def _clip_backward(octx, params, inputs, outputs, req):
    g, x = inputs
    assign(outputs[0], req[0], g * ((x >= params["a_min"]) & (x <= params["a_max"])))


def _clip_grad(node, ograds):
    n = make_node("_backward_clip", [ograds[0], node.inputs[0]], node.name + "_backward", params=node.params)
    return [NodeEntry(n, 0, 0)]


register(OpDef("clip", _clip_kernel, params=_CLIP_PARAMS, inplace=[(0, 0)], gradient=_clip_grad,
               doc="clip(data, a_min, a_max): values limited to [a_min, a_max]."))
def _clip_backward_grad(node, ograds):
    """``_backward_clip(g, x) = g * [a_min <= x <= a_max]``: linear in ``g`` (the same mask again),
    piecewise constant in ``x`` (a zero gradient)."""
    again = make_node("_backward_clip", [ograds[0], node.inputs[1]], node.name + "_backward",
                      params=node.params)
    zero = make_node("zeros_like", [node.inputs[1]], node.name + "_ddata")
    return [NodeEntry(again, 0, 0), NodeEntry(zero, 0, 0)]


register(OpDef("_backward_clip", _clip_backward, arguments=("ograd", "data"), params=_CLIP_PARAMS,
               gradient=_clip_backward_grad))


# --- fast kernel: ``_backward_clip`` (ReLU6's gradient in MobileNet) as one C pass -----------------
# numpy's twin makes two comparisons, their ``&`` and a float * bool product (four passes, three
# temporaries) on one thread; ``nn_kernels.clip_backward`` is one pass, split over the operator
# threads, with the same bits.
_NN = loader.load("nn_kernels", "clip's gradient")
_C_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _c_clip_backward_takes(p, inputs, outputs, req) -> bool:
    """Written (not added), C-contiguous arrays of one float32/float64 dtype and one shape."""
    out = outputs[0]
    return req[0] != "add" and out.dtype in _C_DTYPES and all(
        a.dtype == out.dtype and a.shape == out.shape and a.flags.c_contiguous for a in (*inputs, out))


def _c_clip_backward(octx, p, inputs, outputs, req):
    if req[0] != "null":
        lo, hi = p["a_min"], p["a_max"]
        parallel_elementwise(lambda g, x, dx: _NN.clip_backward(g.reshape(-1), x.reshape(-1), dx.reshape(-1),
                                                                lo, hi, 0, g.size), *inputs, outputs[0])


# An nn_kernels built before this loop existed has no clip_backward: numpy runs until it is rebuilt.
if _NN is not None and hasattr(_NN, "clip_backward"):
    register_kernel("_backward_clip", "cpu", _c_clip_backward, applies=_c_clip_backward_takes,
                    name="nn_kernels.clip_backward")
