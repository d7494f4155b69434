"""Reductions: ``sum``, ``mean``, ``prod``, ``nansum``, ``nanprod``, ``max``, ``min``, ``norm``,
``argmax``, ``argmin``, ``argmax_channel``.

``axis`` is an int, a tuple or ``None``/``()`` (all axes); ``exclude=True`` reduces every axis *not*
listed; ``keepdims`` keeps reduced axes as size 1. A reduction to a scalar has shape ``(1,)``, and
the output keeps the input dtype (``argmax`` too: float32 in, float32 indices out).

Gradients reshape the head gradient to the kept-dims shape and broadcast it back, times
``1`` (sum), ``1/n`` (mean), ``y/x`` (prod), ``x == y`` (max/min: every tie gets it, as MXNet),
``x/y`` (2-norm) or ``sign(x)`` (1-norm). ``argmax``/``argmin`` have zero gradient.
"""
from __future__ import annotations

from typing import Callable, Tuple

import numpy as np

from .. import util as _util
from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .elemwise import zero_grads
from .registry import OpDef, Param, assign, register

__all__ = ["reduce_axes", "reduced_shape"]


def reduce_axes(op: str, axis, ndim: int, exclude: bool = False) -> Tuple[int, ...]:
    """The sorted, non-negative axes a reduction runs over."""
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    axes = set()
    for a in axis:
        if not -ndim <= a < ndim:
            raise MXNetError(f"{op}: reduction axis {a} exceeds input dimensions of shape with ndim {ndim}")
        if a % ndim in axes:
            raise MXNetError(f"{op}: axis {a} appears twice in {tuple(axis)}")
        axes.add(a % ndim)
    if exclude:
        axes = set(range(ndim)) - axes
    return tuple(sorted(axes))


def reduced_shape(shape, axes, keepdims: bool) -> Tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _axes_of(op: str, params: dict, ndim: int) -> Tuple[int, ...]:
    return reduce_axes(op, params["axis"], ndim, params.get("exclude", False))


def _shape_rule(op: str):
    def infer(params, in_shapes):
        src = in_shapes[0]
        if src is None:
            return list(in_shapes), [None]
        if op in ("max", "min") and 0 in src and _util.is_np_shape():
            # a max/min has no identity; a 0 is a real zero-size dim only under NumPy shape
            # semantics (legacy reads it as unknown), as MXNet's ReduceMinMaxAxesShape checks
            raise MXNetError(f"{op}: reduction input's size should be > 0, got shape {tuple(src)}")
        axes = _axes_of(op, params, len(src))
        return list(in_shapes), [reduced_shape(src, axes, params["keepdims"])]
    return infer


def _kernel(op: str, fn: Callable):
    def kernel(octx, params, inputs, outputs, req):
        x, out = inputs[0], outputs[0]
        axes = _axes_of(op, params, x.ndim)
        res = fn(x, axes) if axes else x
        assign(out, req[0], np.reshape(res, out.shape))
    return kernel


def _backward(op: str, weight: Callable) -> str:
    """``_backward_<op>(ograd, data, out)``: ``broadcast(ograd) * weight(x, y, axes)``."""
    def kernel(octx, params, inputs, outputs, req):
        g, x, y = inputs
        axes = _axes_of(op, params, x.ndim)
        kept = reduced_shape(x.shape, axes, True)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = weight(x, np.reshape(y, kept), axes, params)
        assign(outputs[0], req[0], np.reshape(g, kept) * w)

    def shape(params, in_shapes):
        return list(in_shapes), [in_shapes[1]]

    def dtype(params, in_types):
        return list(in_types), [in_types[1]]

    name = f"_backward_{op}"
    register(OpDef(name, kernel, arguments=("ograd", "data", "output"), params=_PARAMS[op],
                   infer_shape=shape, infer_type=dtype))
    return name


def _grad(bname: str):
    def grad(node, ograds):
        n = make_node(bname, [ograds[0], node.inputs[0], NodeEntry(node, 0, 0)],
                      node.name + "_backward", params=node.params)
        return [NodeEntry(n, 0, 0)]
    return grad


_REDUCE_PARAMS = {"axis": Param("axis", None), "keepdims": Param("bool", False),
                  "exclude": Param("bool", False)}
_NORM_PARAMS = {"ord": Param("int", 2, choices=(1, 2)), "axis": Param("axis", None),
                "out_dtype": Param("dtype", None), "keepdims": Param("bool", False)}
_PARAMS = {}


def _count(x, axes):
    return float(np.prod([x.shape[a] for a in axes])) if axes else 1.0


_REDUCERS = {
    # name: (forward over axes, gradient weight (x, y_kept, axes, params), aliases)
    "sum": (lambda x, a: np.sum(x, axis=a), lambda x, y, a, p: np.ones_like(x), ("sum_axis",)),
    "mean": (lambda x, a: np.mean(x, axis=a), lambda x, y, a, p: np.full_like(x, 1.0 / _count(x, a)), ()),
    "prod": (lambda x, a: np.prod(x, axis=a), lambda x, y, a, p: y / x, ()),
    "nansum": (lambda x, a: np.nansum(x, axis=a), lambda x, y, a, p: (~np.isnan(x)).astype(x.dtype), ()),
    "nanprod": (lambda x, a: np.nanprod(x, axis=a),
                lambda x, y, a, p: np.where(np.isnan(x), 0, y / x), ()),
    "max": (lambda x, a: np.max(x, axis=a), lambda x, y, a, p: (x == y).astype(x.dtype), ("max_axis",)),
    "min": (lambda x, a: np.min(x, axis=a), lambda x, y, a, p: (x == y).astype(x.dtype), ("min_axis",)),
}

for _name, (_fwd, _weight, _aliases) in _REDUCERS.items():
    _PARAMS[_name] = _REDUCE_PARAMS
    register(OpDef(_name, _kernel(_name, _fwd), params=_REDUCE_PARAMS, infer_shape=_shape_rule(_name),
                   gradient=_grad(_backward(_name, _weight)), aliases=_aliases,
                   doc=f"{_name}(data, axis=None, keepdims=False, exclude=False): reduce over axes."))


# ---------------------------------------------------------------------------------------------
# norm
# ---------------------------------------------------------------------------------------------

def _norm(x, axes, ord_=2):
    # NOTE: entrywise over any number of axes, as MXNet computes it (a 2-tuple is not a matrix norm)
    if ord_ == 1:
        return np.sum(np.abs(x), axis=axes)
    return np.sqrt(np.sum(np.square(x), axis=axes))


def _norm_type(params, in_types):
    return list(in_types), [params["out_dtype"] or in_types[0]]


def _norm_weight(x, y, axes, params):
    return np.sign(x) if params["ord"] == 1 else x / y


def _norm_kernel(octx, params, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    axes = _axes_of("norm", params, x.ndim)
    assign(out, req[0], np.reshape(_norm(x, axes, params["ord"]), out.shape))


_PARAMS["norm"] = _NORM_PARAMS
register(OpDef("norm", _norm_kernel, params=_NORM_PARAMS, infer_shape=_shape_rule("norm"),
               infer_type=_norm_type,
               gradient=_grad(_backward("norm", _norm_weight)),
               doc="norm(data, ord=2, axis=None, out_dtype=None, keepdims=False): L1 or L2 norm."))


# ---------------------------------------------------------------------------------------------
# argmax / argmin
# ---------------------------------------------------------------------------------------------

def _arg_shape(op: str):
    def infer(params, in_shapes):
        src = in_shapes[0]
        if src is None:
            return list(in_shapes), [None]
        axis = params["axis"]
        if axis is None:
            return list(in_shapes), [(1,) * len(src) if params["keepdims"] else (1,)]
        axes = reduce_axes(op, (axis,), len(src))
        return list(in_shapes), [reduced_shape(src, axes, params["keepdims"])]
    return infer


def _arg_kernel(fn: Callable):
    def kernel(octx, params, inputs, outputs, req):
        x, out = inputs[0], outputs[0]
        axis = params["axis"]
        res = fn(x, axis=None) if axis is None else fn(x, axis=axis % x.ndim)
        assign(out, req[0], np.reshape(res, out.shape).astype(out.dtype))
    return kernel


_ARG_PARAMS = {"axis": Param("int_or_none", None), "keepdims": Param("bool", False)}
for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register(OpDef(_name, _arg_kernel(_fn), params=_ARG_PARAMS, infer_shape=_arg_shape(_name),
                   gradient=zero_grads,
                   doc=f"{_name}(data, axis=None, keepdims=False): indices, in the input dtype."))


def _channel_shape(params, in_shapes):
    return _arg_shape("argmax_channel")({"axis": -1, "keepdims": False}, in_shapes)


def _channel_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], np.argmax(inputs[0], axis=-1).reshape(outputs[0].shape))


register(OpDef("argmax_channel", _channel_kernel, infer_shape=_channel_shape, gradient=zero_grads,
               doc="argmax_channel(data): argmax over the last axis."))
