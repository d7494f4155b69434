"""Slicing and assignment: ``slice``, ``slice_axis``, ``slice_like``, ``_slice_assign``,
``_slice_assign_scalar``.

``begin``/``end``/``step`` follow Python's slice rules per axis (``None`` = default, negatives
count from the end, out-of-range bounds clamp); axes past ``len(begin)`` are kept whole. The NDArray
``x[1:3] = y`` is ``_slice_assign(x, y, begin, end, step)`` writing in place.

Gradients: ``slice`` scatters the head gradient into zeros (``_slice_assign(zeros_like(x), g)``);
``_slice_assign`` sends ``g`` outside the region to ``lhs`` and ``g[region]`` to ``rhs``.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .elemwise import zero_grads
from .registry import REQUIRED, OpDef, Param, _parse_literal, assign, register

__all__ = ["index_tuple", "slice_key"]


def index_tuple(v, what: str = "begin") -> Tuple[Optional[int], ...]:
    """``(1, None, -2)`` from a tuple, list, int or MXNet's string form ``'(1, None, -2)'``."""
    if isinstance(v, str):
        v = _parse_literal(v.replace("L", ""))
    if v is None:
        return ()
    if isinstance(v, (int, np.integer)):
        v = (v,)
    try:
        return tuple(None if x is None or x == "None" else int(x) for x in v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a tuple of ints or None, got {v!r}") from None


def _validate(params: dict) -> None:
    for key in ("begin", "end", "step"):
        try:
            params[key] = index_tuple(params[key], key)
        except ValueError as exc:
            raise MXNetError(f"slice: {exc}") from None
    if len(params["begin"]) != len(params["end"]):
        raise MXNetError(f"slice: begin {params['begin']} and end {params['end']} must have the same "
                         "length")
    if params["step"] and len(params["step"]) != len(params["begin"]):
        raise MXNetError(f"slice: step {params['step']} must have the length of begin {params['begin']}")
    if any(s == 0 for s in params["step"]):
        raise MXNetError(f"slice: step {params['step']} must not contain 0")


def slice_key(op: str, params: dict, shape) -> Tuple[slice, ...]:
    """The numpy index of ``params``' region in an array of ``shape``."""
    begin, end, step = params["begin"], params["end"], params["step"] or (None,) * len(params["begin"])
    if len(begin) > len(shape):
        raise MXNetError(f"{op}: begin {begin} has more axes than the input shape {tuple(shape)}")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _region_shape(op: str, params: dict, shape) -> Tuple[int, ...]:
    key = slice_key(op, params, shape)
    return tuple(len(range(*k.indices(d))) for k, d in zip(key, shape)) + tuple(shape[len(key):])


_SLICE_PARAMS = {"begin": Param("any", REQUIRED, "starting indices"),
                 "end": Param("any", REQUIRED, "ending indices (exclusive)"),
                 "step": Param("any", (), "step for each axis")}


def _slice_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    return list(in_shapes), [_region_shape("slice", params, src)]


def _slice_kernel(octx, params, inputs, outputs, req):
    x = inputs[0]
    assign(outputs[0], req[0], x[slice_key("slice", params, x.shape)])


def _slice_grad(node, ograds):
    zeros = make_node("zeros_like", [node.inputs[0]], node.name + "_zeros")
    n = make_node("_slice_assign", [NodeEntry(zeros, 0, 0), ograds[0]], node.name + "_backward",
                  params=node.params)
    return [NodeEntry(n, 0, 0)]


register(OpDef("slice", _slice_kernel, aliases=("crop",), params=_SLICE_PARAMS, validate=_validate,
               infer_shape=_slice_shape, gradient=_slice_grad,
               doc="slice(data, begin, end, step=()): a sub-array, Python slice rules per axis."))


# ---------------------------------------------------------------------------------------------
# Assignment into a region (the NDArray's __setitem__)
# ---------------------------------------------------------------------------------------------

def _assign_shape(params, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None:
        return list(in_shapes), [None]
    region = _region_shape("_slice_assign", params, lhs)
    if rhs is not None and tuple(rhs) != region:
        raise MXNetError(f"_slice_assign: value shape {tuple(rhs)} does not match the region "
                         f"{region} of {tuple(lhs)}")
    return [lhs, region], [lhs]


def _assign_kernel(octx, params, inputs, outputs, req):
    lhs, rhs = inputs
    out = outputs[0]
    key = slice_key("_slice_assign", params, lhs.shape)
    if req[0] == "add":
        tmp = lhs.copy()
        tmp[key] = rhs
        out += tmp
        return
    if req[0] == "write":
        np.copyto(out, lhs)
    out[key] = rhs   # 'inplace': out is lhs, only the region moves


def _assign_grad(node, ograds):
    lhs_g = make_node("_slice_assign_scalar", [ograds[0]], node.name + "_backward_lhs",
                      params=dict(node.params, scalar=0.0))
    rhs_g = make_node("slice", [ograds[0]], node.name + "_backward_rhs", params=node.params)
    return [NodeEntry(lhs_g, 0, 0), NodeEntry(rhs_g, 0, 0)]


register(OpDef("_slice_assign", _assign_kernel, arguments=("lhs", "rhs"), aliases=("_crop_assign",),
               params=_SLICE_PARAMS, validate=_validate, infer_shape=_assign_shape,
               inplace=[(0, 0)], gradient=_assign_grad,
               doc="_slice_assign(lhs, rhs, begin, end, step): ``lhs`` with the region set to ``rhs``."))


def _assign_scalar_shape(params, in_shapes):
    if in_shapes[0] is not None:
        _region_shape("_slice_assign_scalar", params, in_shapes[0])
    return list(in_shapes), [in_shapes[0]]


def _assign_scalar_kernel(octx, params, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    key = slice_key("_slice_assign_scalar", params, x.shape)
    if req[0] == "add":
        tmp = x.copy()
        tmp[key] = params["scalar"]
        out += tmp
        return
    if req[0] == "write":
        np.copyto(out, x)
    out[key] = params["scalar"]


def _assign_scalar_grad(node, ograds):
    n = make_node("_slice_assign_scalar", [ograds[0]], node.name + "_backward",
                  params=dict(node.params, scalar=0.0))
    return [NodeEntry(n, 0, 0)]


register(OpDef("_slice_assign_scalar", _assign_scalar_kernel, aliases=("_crop_assign_scalar",),
               params=dict(_SLICE_PARAMS, scalar=Param("float", 0.0)), validate=_validate,
               infer_shape=_assign_scalar_shape, inplace=[(0, 0)], gradient=_assign_scalar_grad,
               doc="_slice_assign_scalar(data, scalar, begin, end, step): the region set to a scalar."))


# ---------------------------------------------------------------------------------------------
# slice_axis and slice_like
# ---------------------------------------------------------------------------------------------

def _axis_key(op: str, params: dict, shape) -> Tuple[slice, ...]:
    axis = params["axis"]
    if not -len(shape) <= axis < len(shape):
        raise MXNetError(f"{op}: axis {axis} out of range for shape {tuple(shape)}")
    axis %= len(shape)
    return (slice(None),) * axis + (slice(params["begin"], params["end"]),)


def _slice_axis_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    key = _axis_key("slice_axis", params, src)
    out = list(src)
    out[len(key) - 1] = len(range(*key[-1].indices(src[len(key) - 1])))
    if out[len(key) - 1] == 0:
        raise MXNetError(f"slice_axis: begin {params['begin']} / end {params['end']} select nothing "
                         f"on axis {params['axis']} of {tuple(src)}")
    return list(in_shapes), [tuple(out)]


def _slice_axis_kernel(octx, params, inputs, outputs, req):
    x = inputs[0]
    assign(outputs[0], req[0], x[_axis_key("slice_axis", params, x.shape)])


def _region_backward(key_of):
    def kernel(octx, params, inputs, outputs, req):
        g, x = inputs[0], inputs[1]
        full = np.zeros(x.shape, dtype=g.dtype)
        full[key_of(params, x.shape, inputs)] = g
        assign(outputs[0], req[0], full)
    return kernel


def _region_grad(bname):
    def grad(node, ograds):
        n = make_node(bname, [ograds[0], node.inputs[0]], node.name + "_backward", params=node.params)
        return [NodeEntry(n, 0, 0)] + zero_grads(node)[1:]
    return grad


_SLICE_AXIS_PARAMS = {"axis": Param("int"), "begin": Param("int"), "end": Param("int_or_none")}
register(OpDef("slice_axis", _slice_axis_kernel, params=_SLICE_AXIS_PARAMS, infer_shape=_slice_axis_shape,
               gradient=_region_grad("_backward_slice_axis"),
               doc="slice_axis(data, axis, begin, end): ``data[..., begin:end, ...]`` along ``axis``."))
register(OpDef("_backward_slice_axis",
               _region_backward(lambda p, shape, ins: _axis_key("slice_axis", p, shape)),
               arguments=("ograd", "data"), params=_SLICE_AXIS_PARAMS, ignore_inputs=(1,),
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[0]])))


def _like_key(params, shape, like_shape) -> Tuple[slice, ...]:
    axes = params["axes"] or tuple(range(len(like_shape)))
    if not params["axes"] and len(like_shape) != len(shape):
        raise MXNetError(f"slice_like: shape_like {tuple(like_shape)} must have the ndim of data "
                         f"{tuple(shape)} when axes is empty")
    key = [slice(None)] * len(shape)
    for a in axes:
        if not -len(shape) <= a < len(shape) or not -len(like_shape) <= a < len(like_shape):
            raise MXNetError(f"slice_like: axis {a} out of range for {tuple(shape)} / {tuple(like_shape)}")
        if like_shape[a] > shape[a]:
            raise MXNetError(f"slice_like: shape_like {tuple(like_shape)} is larger than data "
                             f"{tuple(shape)} on axis {a}")
        key[a] = slice(0, like_shape[a])
    return tuple(key)


def _slice_like_shape(params, in_shapes):
    src, like = in_shapes
    if src is None or like is None:
        return list(in_shapes), [None]
    key = _like_key(params, src, like)
    return list(in_shapes), [tuple(len(range(*k.indices(d))) for k, d in zip(key, src))]


def _slice_like_kernel(octx, params, inputs, outputs, req):
    x, like = inputs
    assign(outputs[0], req[0], x[_like_key(params, x.shape, like.shape)])


_LIKE_PARAMS = {"axes": Param("shape", ())}
register(OpDef("slice_like", _slice_like_kernel, arguments=("data", "shape_like"), params=_LIKE_PARAMS,
               infer_shape=_slice_like_shape, infer_type=lambda p, t: (list(t), [t[0]]),
               ignore_inputs=(1,), gradient=_region_grad("_backward_slice_like"),
               doc="slice_like(data, shape_like, axes=()): ``data`` cut to ``shape_like``'s size."))
register(OpDef("_backward_slice_like",
               _region_backward(lambda p, shape, ins: tuple(slice(0, d) for d in ins[0].shape)),
               arguments=("ograd", "data"), params=_LIKE_PARAMS, ignore_inputs=(1,),
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[0]])))
