"""Flat and multi-dimensional indices, and row-wise element access: ``ravel_multi_index``,
``unravel_index``, ``batch_take`` and ``fill_element_0index``.

Math (``shape = (S_0, ..., S_{M-1})``, strides ``st_i = S_{i+1} ... S_{M-1}``)::

    ravel_multi_index(data, shape)[y]   = sum_i data[i, y] * st_i        (data: (M, Y...))
    unravel_index(data, shape)[i, y]    = (data[y] // st_i) % S_i         (no modulo for i = 0)
    batch_take(a, indices)[i]           = a[i, indices[i]]                (a as rows of a.shape[-1])
    fill_element_0index(lhs, mhs, rhs)  = lhs with lhs[i, rhs[i]] = mhs[i]

``S_0`` may be -1 (unknown): it never enters a stride. Results keep the input dtype. As in MXNet,
``ravel`` does not check ranges; ``batch_take`` clips its int32 indices into the row;
``fill_element_0index`` leaves a row unchanged where its index is out of range.

Gradients: none of these has one in MXNet except ``ravel``/``unravel`` (zero); ``batch_take``
and ``fill_element_0index`` have none.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .elemwise import zero_grads
from .registry import OpDef, Param, assign, register

_SHAPE = {"shape": Param("shape", None, doc="Shape of the array the multi-indices apply to.")}


def _strides(op: str, shape) -> np.ndarray:
    if not shape:
        raise MXNetError(f"{op}: the parameter shape is required")
    if any(d <= 0 for d in shape[1:]):
        raise MXNetError(f"{op}: only the leading dimension of shape {tuple(shape)} may be unknown (-1)")
    return np.cumprod((1,) + tuple(shape[:0:-1]))[::-1].astype(np.int64)


def _ravel_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return list(in_shapes), [None]
    if not s or s[0] != len(p["shape"] or ()):
        raise MXNetError(f"ravel_multi_index: data of shape {tuple(s)} must hold one row per "
                         f"dimension of shape {p['shape']}")
    return list(in_shapes), [tuple(s[1:]) or (1,)]


def _ravel(octx, p, inputs, outputs, req):
    idx = inputs[0].astype(np.int64)
    st = _strides("ravel_multi_index", p["shape"]).reshape((-1,) + (1,) * (idx.ndim - 1))
    assign(outputs[0], req[0], (idx * st).sum(axis=0).reshape(outputs[0].shape))


def _unravel_shape(p, in_shapes):
    s = in_shapes[0]
    n = len(p["shape"] or ())
    return list(in_shapes), [None if s is None else (n,) + tuple(s)]


def _unravel(octx, p, inputs, outputs, req):
    flat = inputs[0].astype(np.int64)
    shape = p["shape"]
    st = _strides("unravel_index", shape)
    out = np.empty((len(shape),) + flat.shape, np.int64)
    for i, s in enumerate(st):
        out[i] = flat // s if i == 0 else (flat // s) % shape[i]
    assign(outputs[0], req[0], out)


register(OpDef("_ravel_multi_index", _ravel, params=_SHAPE, aliases=("ravel_multi_index",),
               infer_shape=_ravel_shape, gradient=zero_grads,
               doc="ravel_multi_index(data, shape): flat indices of the columns of ``data``, e.g. "
                   "``[[3, 6, 6], [4, 5, 1]]`` with shape (7, 6) gives ``[22, 41, 37]``."))
register(OpDef("_unravel_index", _unravel, params=_SHAPE, aliases=("unravel_index",),
               infer_shape=_unravel_shape, gradient=zero_grads,
               doc="unravel_index(data, shape): the multi-indices (as columns) of flat indices, e.g. "
                   "``[22, 41, 37]`` with shape (7, 6) gives ``[[3, 6, 6], [4, 5, 1]]``."))


def _batch_take_shape(p, in_shapes):
    a, idx = in_shapes
    if a is not None and idx is not None and int(np.prod(a[:-1])) != int(np.prod(idx)):
        raise MXNetError(f"batch_take: indices of shape {tuple(idx)} need one entry per row of a "
                         f"(shape {tuple(a)}: {int(np.prod(a[:-1]))} rows)")
    return list(in_shapes), [idx]


def _batch_take_type(p, in_types):
    if in_types[1] is not None and in_types[1] != np.int32:
        raise MXNetError(f"batch_take: indices must be int32, got {np.dtype(in_types[1]).name}")
    return [in_types[0], np.dtype(np.int32)], [in_types[0]]


def _batch_take(octx, p, inputs, outputs, req):
    a, idx = inputs
    rows = a.reshape(-1, a.shape[-1])
    col = np.clip(idx.reshape(-1).astype(np.int64), 0, a.shape[-1] - 1)
    assign(outputs[0], req[0], rows[np.arange(rows.shape[0]), col].reshape(idx.shape))


register(OpDef("batch_take", _batch_take, arguments=("a", "indices"), infer_shape=_batch_take_shape,
               infer_type=_batch_take_type,
               doc="batch_take(a, indices): ``a[i, indices[i]]`` for each row ``i`` (deprecated: pick)."))


def _fill_shape(p, in_shapes):
    lhs, mhs, rhs = in_shapes
    rows = None if lhs is None else (lhs[0],)
    for what, s in (("mhs", mhs), ("rhs", rhs)):
        if s is not None and rows is not None and tuple(s) != rows:
            raise MXNetError(f"fill_element_0index: {what} of shape {tuple(s)} must be {rows} for "
                             f"lhs of shape {tuple(lhs)}")
    return [lhs, rows, rows], [lhs]


def _fill(octx, p, inputs, outputs, req):
    lhs, mhs, rhs = inputs
    out = lhs.copy()
    col = rhs.astype(np.int64)
    ok = (col >= 0) & (col < lhs.shape[1])
    out[np.nonzero(ok)[0], col[ok]] = mhs[ok]
    assign(outputs[0], req[0], out)


register(OpDef("fill_element_0index", _fill, arguments=("lhs", "mhs", "rhs"), infer_shape=_fill_shape,
               infer_type=lambda p, t: ([t[0], t[0], t[0]], [t[0]]), inplace=[(0, 0)],
               doc="fill_element_0index(lhs, mhs, rhs): ``lhs`` with ``lhs[i, rhs[i]] = mhs[i]``."))
