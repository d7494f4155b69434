"""Reductions over sparse arrays: ``sum`` / ``mean`` of a csr along an axis, and ``_square_sum``.

Math: ``sum(A, axis=0)[k]`` adds the stored values of column ``k`` (``np.bincount`` by column),
``sum(A, axis=1)[i]`` those of row ``i`` (a segment sum over ``indptr``); ``mean`` divides by the
reduced length, stored or not. ``_square_sum(x, axis)`` is ``sum(x * x, axis)`` without making
``x * x`` dense: for a row_sparse ``x`` and ``axis=1`` (``keepdims``) it stays row_sparse, one
value per stored row (the squared norms a lazy optimizer's gradient clipping needs).
The gradient of ``_square_sum`` is ``2 x dout`` (dense, ``_backward_square_sum``).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ...graph import NodeEntry, make_node
from .. import reduce  # noqa: F401 - registers 'sum' / 'mean' first
from ..registry import OpDef, Param, assign, register
from .base import CSR, RowSparse, register_storage, todense


def _axis(params):
    axis = params["axis"]
    if params.get("exclude"):
        return None
    if axis is None or len(axis) != 1:
        return None
    return axis[0] % 2


def _csr_reduce_storage(params, in_stypes):
    return ["default"] if in_stypes == ["csr"] and _axis(params) is not None else None


def _csr_reduce_for(mean: bool):
    def kernel(octx, params, inputs, outputs, req):
        x, out = inputs[0], outputs[0]
        axis = _axis(params)
        if axis == 0:
            res = np.bincount(x.indices, weights=x.data, minlength=x.shape[1])
        else:
            csum = np.concatenate([[0], np.cumsum(x.data, dtype=np.float64)])
            res = csum[x.indptr[1:]] - csum[x.indptr[:-1]]
        if mean:
            res = res / x.shape[axis]
        assign(out, req[0], res.astype(out.dtype).reshape(out.shape))
    return kernel


register_storage("sum", _csr_reduce_storage, _csr_reduce_for(False))
register_storage("mean", _csr_reduce_storage, _csr_reduce_for(True))


# -------------------------------------------------------------------------------------------
# _square_sum
# -------------------------------------------------------------------------------------------

_PARAMS = {"axis": Param("axis", None), "keepdims": Param("bool", False), "exclude": Param("bool", False)}


def _axes(params):
    return None if params["axis"] is None else tuple(params["axis"])


def _square_sum_dense(octx, params, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    assign(out, req[0], np.sum(x * x, axis=_axes(params), keepdims=params["keepdims"]).reshape(out.shape))


def _square_sum_shape(params, in_shapes):
    s = in_shapes[0]
    if s is None:
        return list(in_shapes), [None]
    if params["exclude"]:
        raise MXNetError("_square_sum: exclude=True is not supported")
    axes = range(len(s)) if params["axis"] is None else [a % len(s) for a in params["axis"]]
    if params["keepdims"]:
        out = tuple(1 if i in axes else d for i, d in enumerate(s))
    else:
        out = tuple(d for i, d in enumerate(s) if i not in axes) or (1,)
    return list(in_shapes), [out]


def _square_sum_storage(params, in_stypes):
    if in_stypes[0] not in ("row_sparse", "csr"):
        return None
    if in_stypes[0] == "row_sparse" and params["axis"] == (1,) and params["keepdims"]:
        return ["row_sparse"]
    return ["default"]


def _square_sum_ex(octx, params, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    squares = x.data * x.data
    if not isinstance(out, np.ndarray):      # row_sparse, axis=1, keepdims: one value per row
        out.data = squares.reshape(squares.shape[0], -1).sum(axis=1).reshape(-1, 1)
        out.indices = np.copy(x.indices)
        return
    kind = CSR(squares, x.indices, x.indptr, x.shape) if isinstance(x, CSR) else \
        RowSparse(squares, x.indices, x.shape)
    full = todense(kind)
    assign(out, req[0], np.sum(full, axis=_axes(params), keepdims=params["keepdims"]).reshape(out.shape))


def _square_sum_backward(octx, params, inputs, outputs, req):
    g, x = inputs
    keep = _square_sum_shape(dict(params, keepdims=True), [x.shape])[1][0]
    assign(outputs[0], req[0], (2 * x * g.reshape(keep)).astype(x.dtype, copy=False))


def _square_sum_grad(node, ograds):
    n = make_node("_backward_square_sum", [ograds[0], node.inputs[0]], node.name + "_backward",
                  params=node.params)
    return [NodeEntry(n, 0, 0)]


register(OpDef("_square_sum", _square_sum_dense, params=_PARAMS, infer_shape=_square_sum_shape,
               gradient=_square_sum_grad,
               doc="_square_sum(data, axis, keepdims): sum(data * data, axis) without the dense square."))
register(OpDef("_backward_square_sum", _square_sum_backward, arguments=("ograd", "data"), params=_PARAMS,
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[1]])))
register_storage("_square_sum", _square_sum_storage, _square_sum_ex)
