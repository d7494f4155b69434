"""Contrib indexing operators: ``boolean_mask``, ``index_copy``, ``index_array``, ``arange_like``
and ``allclose`` (``mx.nd.contrib.*``).

Math::

    boolean_mask(data, index)[j]     = data[i_j], i_0 < i_1 < ... the rows with index[i] != 0
    index_copy(old, index, new)      = old with old[index[i]] = new[i]      (out-of-range i: skipped)
    index_array(data, axes)[i.., j]  = i_{axes[j]}                            (int64)
    arange_like(data, start, step, repeat)[n] = start + (n // repeat) * step  (data's shape or axis)
    allclose(a, b, rtol, atol, equal_nan) = all(|a - b| <= atol + rtol |b|)  (uint8, shape ())

``boolean_mask`` has a data-dependent output shape: the ``mx.nd`` front end reads the mask first
(a wait, as in MXNet) and passes the row count as the hidden ``size`` parameter; a symbol's
output shape stays unknown, so the op is marked ``dynamic_shape`` and a hybridized block holding
it runs op by op. Only ``axis=0`` is supported (MXNet too).

Gradients: ``boolean_mask`` scatters the head gradient back to the kept rows;
``index_copy`` gives ``old`` the head gradient with the copied rows zeroed and ``new`` the head
gradient's copied rows; the rest have zero gradient.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .elemwise import zero_grads
from .nn._util import backward_node, out_entries
from .registry import OpDef, Param, assign, register

# ---------------------------------------------------------------------------------------------
# boolean_mask
# ---------------------------------------------------------------------------------------------

_MASK_PARAMS = {"axis": Param("int", 0, doc="The axis to mask (only 0 is supported)."),
                "size": Param("int", -1, doc="Number of rows kept; the NDArray front end fills it in.")}


def _mask_shape(p, in_shapes):
    data, idx = in_shapes
    if p["axis"] != 0:
        raise MXNetError(f"boolean_mask: axis={p['axis']} is not supported, only axis=0")
    if data is not None and idx is not None and (len(idx) != 1 or idx[0] != data[0]):
        raise MXNetError(f"boolean_mask: index of shape {tuple(idx)} must be 1-D with the "
                         f"{data[0]} rows of data of shape {tuple(data)}")
    if data is None or p["size"] < 0:
        return list(in_shapes), [None]
    return list(in_shapes), [(p["size"],) + tuple(data[1:])]


def _mask(octx, p, inputs, outputs, req):
    data, idx = inputs
    rows = data[np.nonzero(idx)[0]]
    if rows.shape != outputs[0].shape:
        raise MXNetError(f"boolean_mask: the mask keeps {rows.shape[0]} rows, the output was made "
                         f"for {outputs[0].shape[0]}")
    assign(outputs[0], req[0], rows)


def _mask_backward(octx, p, inputs, outputs, req):
    g, data, idx = inputs
    grad = np.zeros(data.shape, g.dtype)
    grad[np.nonzero(idx)[0]] = g
    assign(outputs[0], req[0], grad)
    assign(outputs[1], req[1], 0)


_MASK = register(OpDef("_contrib_boolean_mask", _mask, arguments=("data", "index"), params=_MASK_PARAMS,
               infer_shape=_mask_shape, infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=lambda node, og: out_entries(backward_node(
                   node, "_backward_contrib_boolean_mask", [og[0], *node.inputs]), 2),
               doc="boolean_mask(data, index, axis=0): the rows of ``data`` where ``index`` is non-zero."))
_MASK.dynamic_shape = True
register(OpDef("_backward_contrib_boolean_mask", _mask_backward, arguments=("ograd", "data", "index"),
               params=_MASK_PARAMS, outputs=("data_grad", "index_grad"), ignore_inputs=(1,),
               infer_shape=lambda p, s: (list(s), [s[1], s[2]]),
               infer_type=lambda p, t: (list(t), [t[0], t[2]])))


# ---------------------------------------------------------------------------------------------
# index_copy
# ---------------------------------------------------------------------------------------------

def _rows_in_range(index: np.ndarray, n: int):
    idx = index.astype(np.int64).reshape(-1)
    ok = (idx >= 0) & (idx < n)
    return idx, ok


def _copy_shape(p, in_shapes):
    old, idx, new = in_shapes
    if old is not None and new is not None and (len(old) != len(new) or tuple(old[1:]) != tuple(new[1:])):
        raise MXNetError(f"index_copy: new_tensor of shape {tuple(new)} must match old_tensor of "
                         f"shape {tuple(old)} beyond the first axis")
    if idx is not None and new is not None and (len(idx) != 1 or idx[0] != new[0]):
        raise MXNetError(f"index_copy: index_vector of shape {tuple(idx)} must be 1-D with one "
                         f"entry per row of new_tensor (shape {tuple(new)})")
    return list(in_shapes), [old]


def _copy(octx, p, inputs, outputs, req):
    old, index, new = inputs
    idx, ok = _rows_in_range(index, old.shape[0])
    out = old.copy()
    out[idx[ok]] = new[ok]
    assign(outputs[0], req[0], out)


def _copy_backward(octx, p, inputs, outputs, req):
    g, index = inputs
    idx, ok = _rows_in_range(index, g.shape[0])
    g_old = g.copy()
    g_old[idx[ok]] = 0
    g_new = np.zeros((idx.size,) + g.shape[1:], g.dtype)
    g_new[ok] = g[idx[ok]]
    assign(outputs[0], req[0], g_old)
    assign(outputs[1], req[1], 0)
    assign(outputs[2], req[2], g_new)


def _copy_backward_shape(p, in_shapes):
    g, idx = in_shapes
    new = None if g is None or idx is None else (idx[0],) + tuple(g[1:])
    return list(in_shapes), [g, idx, new]


register(OpDef("_contrib_index_copy", _copy, arguments=("old_tensor", "index_vector", "new_tensor"),
               infer_shape=_copy_shape, infer_type=lambda p, t: ([t[0], t[1], t[0]], [t[0]]),
               gradient=lambda node, og: out_entries(backward_node(
                   node, "_contrib_backward_index_copy", [og[0], node.inputs[1]]), 3),
               doc="index_copy(old_tensor, index_vector, new_tensor): ``old_tensor`` with row "
                   "``index_vector[i]`` replaced by row ``i`` of ``new_tensor``."))
register(OpDef("_contrib_backward_index_copy", _copy_backward, arguments=("ograd", "index_vector"),
               outputs=("old_grad", "index_grad", "new_grad"), infer_shape=_copy_backward_shape,
               infer_type=lambda p, t: (list(t), [t[0], t[1], t[0]])))


# ---------------------------------------------------------------------------------------------
# index_array, arange_like, allclose
# ---------------------------------------------------------------------------------------------

def _index_axes(p, ndim: int):
    axes = p["axes"]
    if axes is None:
        return tuple(range(ndim))
    for a in axes:
        if not -ndim <= a < ndim:
            raise MXNetError(f"index_array: axis {a} out of range for {ndim}-d data")
    return tuple(a % ndim for a in axes)


def _index_array(octx, p, inputs, outputs, req):
    shape = inputs[0].shape
    grids = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
    assign(outputs[0], req[0], np.stack([grids[a] for a in _index_axes(p, len(shape))], axis=-1))


register(OpDef("_contrib_index_array", _index_array,
               params={"axes": Param("axis", None, doc="Axes to index.")},
               infer_shape=lambda p, s: (list(s), [None if s[0] is None else
                                                   tuple(s[0]) + (len(_index_axes(p, len(s[0]))),)]),
               infer_type=lambda p, t: (list(t), [np.dtype(np.int64)]), gradient=zero_grads,
               ignore_inputs=(0,),
               doc="index_array(data, axes=None): ``idx[i_1, ..., i_n, j] = i_{axes[j]}`` (int64)."))

_ARANGE_PARAMS = {"start": Param("float", 0.0), "step": Param("float", 1.0), "repeat": Param("int", 1),
                  "ctx": Param("str", ""), "axis": Param("int_or_none", None)}


def _arange_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None or p["axis"] is None:
        return list(in_shapes), [s]
    if not -len(s) <= p["axis"] < len(s):
        raise MXNetError(f"arange_like: axis {p['axis']} out of range for data of shape {tuple(s)}")
    return list(in_shapes), [(s[p["axis"]],)]


def _arange_like(octx, p, inputs, outputs, req):
    out = outputs[0]
    n = np.arange(out.size, dtype=np.float64) // p["repeat"]
    assign(out, req[0], (p["start"] + n * p["step"]).reshape(out.shape).astype(out.dtype))


register(OpDef("_contrib_arange_like", _arange_like, params=_ARANGE_PARAMS, infer_shape=_arange_shape,
               infer_type=lambda p, t: (list(t), [t[0]]), gradient=zero_grads, ignore_inputs=(0,),
               doc="arange_like(data, start=0, step=1, repeat=1, axis=None): evenly spaced values "
                   "shaped like ``data`` (or its ``axis``)."))

_CLOSE_PARAMS = {"rtol": Param("float", 1e-5, doc="Relative tolerance."),
                 "atol": Param("float", 1e-8, doc="Absolute tolerance."),
                 "equal_nan": Param("bool", True, doc="Whether NaN equals NaN.")}


def _allclose_shape(p, in_shapes):
    a, b = in_shapes
    if a is not None and b is not None and tuple(a) != tuple(b):
        raise MXNetError(f"allclose: a of shape {tuple(a)} and b of shape {tuple(b)} differ")
    return list(in_shapes), [()]


def _allclose(octx, p, inputs, outputs, req):
    a, b = (x.astype(np.float64) for x in inputs)
    close = np.abs(a - b) <= p["atol"] + p["rtol"] * np.abs(b)
    if p["equal_nan"]:
        close |= np.isnan(a) & np.isnan(b)
    assign(outputs[0], req[0], np.uint8(close.all()))


register(OpDef("_contrib_allclose", _allclose, arguments=("a", "b"), params=_CLOSE_PARAMS,
               infer_shape=_allclose_shape, infer_type=lambda p, t: (list(t), [np.dtype(np.uint8)]),
               gradient=zero_grads, doc="allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True): 1 if "
                                        "``|a - b| <= atol + rtol |b|`` everywhere, else 0 (uint8)."))
