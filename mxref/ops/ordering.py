"""Sorting operators: ``sort``, ``argsort`` and ``topk`` (with its gradient ``_backward_topk``).

All three order the elements of each 1-D slice along ``axis`` (``axis=None``: the flattened
array). The order is total and deterministic:

* ascending is numpy's order, with NaN larger than every number (so NaN comes last, first when
  descending);
* equal values keep their index order, ascending *and* descending (a stable sort), which is what
  MXNet's CPU sort gives on small slices (its order on ties in large slices, and with NaN, is
  whatever ``std::sort`` leaves, so it is not a specification).

``topk(x, k)`` picks the ``k`` largest (``is_ascend=False``) or smallest elements of each slice,
in that order; ``k <= 0`` means the whole slice. ``ret_typ``: ``'value'``, ``'indices'`` (in
``dtype``, float32 by default, as MXNet), ``'mask'`` (1 at the chosen elements, input dtype,
input shape) or ``'both'`` (values and indices). ``sort`` has a hidden second output, the int32
indices its gradient needs; ``argsort`` is ``topk(k=0, ret_typ='indices')``.

Gradient: ``d sort`` and ``d topk`` (values) scatter the head gradient back to the positions the
values came from: ``dx[idx[j]] = g[j]``, zero elsewhere. Indices and masks have zero gradient.

Kernels: numpy only, each path exact (the tests compare them with a plain stable sort). Dtypes of
32 bits or less sort one uint64 ``order-preserving key << 32 | index`` per element (stable by
construction); 64-bit dtypes take a quicksort ``argsort`` and re-sort only slices that hold ties.
A small ``k`` finds each slice's k-th value by ``np.partition`` and sorts the ``k`` elements past
it (a slice with a tie at the k-th value is sorted whole), or, on a long slice, the elements past
a threshold read off a strided sample.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..graph import make_node
from .elemwise import zero_grads
from .nn._util import backward_node, out_entries
from .registry import OpDef, Param, assign, register

_IDX_TYPES = ("float16", "float32", "float64", "int32", "int64", "uint8")
_TOPK_PARAMS = {
    "axis": Param("int_or_none", -1, doc="Axis of the slices; None: the flattened array."),
    "k": Param("int", 1, doc="Number of elements to select; k < 1 selects the whole slice."),
    "ret_typ": Param("str", "indices", choices=("both", "indices", "mask", "value"),
                     doc="What to return: values, indices, a 0/1 mask, or values and indices."),
    "is_ascend": Param("bool", False, doc="Select the k smallest (True) or largest (False)."),
    "dtype": Param("dtype", np.dtype(np.float32), choices=[np.dtype(t) for t in _IDX_TYPES],
                   doc="DType of the indices."),
}
_SORT_PARAMS = {"axis": _TOPK_PARAMS["axis"],
                "is_ascend": Param("bool", True, doc="Sort in ascending (True) or descending order.")}
_ARGSORT_PARAMS = dict(_SORT_PARAMS, dtype=_TOPK_PARAMS["dtype"])


# ---------------------------------------------------------------------------------------------
# Ordering rows of a (batch, n) array
# ---------------------------------------------------------------------------------------------

def _stable_argsort(a: np.ndarray, ascending: bool) -> np.ndarray:
    if ascending:
        return np.argsort(a, axis=1, kind="stable")
    # Descending with ties in index order: a stable ascending sort of the reversed row, reversed.
    n = a.shape[1]
    return (n - 1 - np.argsort(a[:, ::-1], axis=1, kind="stable"))[:, ::-1]


def _needs_stable(sv: np.ndarray, ascending: bool) -> np.ndarray:
    """Rows whose sorted values ``sv`` hold a tie (equal neighbours, or two NaNs at the NaN end)."""
    tied = (sv[:, 1:] == sv[:, :-1]).any(axis=1)
    if sv.dtype.kind == "f" and sv.shape[1] > 1:
        tied |= np.isnan(sv[:, -2] if ascending else sv[:, 1])
    return tied


def _key32(a: np.ndarray) -> np.ndarray:
    """uint32 keys whose unsigned order is the order of ``a`` (NaN largest, -0.0 == 0.0)."""
    if a.dtype.kind == "f":
        a = a.astype(np.float32) + np.float32(0)      # float16 exactly; -0.0 + 0 is +0.0
        nan = np.isnan(a)
        if nan.any():
            a[nan] = np.nan                              # one NaN: a negative one sorts low
        u = a.view(np.uint32)
        flip = u >> np.uint32(31)
        np.negative(flip, out=flip)                      # all ones for negatives: flip every bit
        flip |= np.uint32(0x80000000)                    # else only the sign bit
        return np.bitwise_xor(u, flip, out=flip)
    if a.dtype.kind == "i":
        return a.astype(np.int32).view(np.uint32) ^ np.uint32(0x80000000)
    return a.astype(np.uint32)


def _keyed_argsort(a: np.ndarray, ascending: bool) -> np.ndarray:
    """Stable argsort of rows of a dtype of 32 bits or less: one sort of uint64 ``key << 32 | index``
    (faster than numpy's stable sort, and exact: equal keys are ordered by index)."""
    key = _key32(a)
    if not ascending:
        np.invert(key, out=key)
    full = key.astype(np.uint64)
    full <<= np.uint64(32)
    full |= np.arange(a.shape[1], dtype=np.uint64)
    full.sort(axis=1)
    full &= np.uint64(0xFFFFFFFF)
    return full.astype(np.int64)


def argsort_rows(a: np.ndarray, ascending: bool) -> np.ndarray:
    """Indices ordering each row of 2-D ``a`` (stable, NaN largest)."""
    if a.dtype.itemsize <= 4 and a.dtype.kind in "fiub" and a.shape[1] < 2 ** 32:
        return _keyed_argsort(a, ascending)
    idx = np.argsort(a, axis=1)
    if not ascending:
        idx = idx[:, ::-1]
    if a.shape[1] > 1:
        tied = _needs_stable(np.take_along_axis(a, idx, axis=1), ascending)
        if tied.any():
            idx[tied] = _stable_argsort(a[tied], ascending)
    return idx


def _sampled_topk(row: np.ndarray, k: int, ascending: bool):
    """Top-k of one long row from the elements past a threshold read off a strided sample, or
    ``None`` when fewer than ``k`` pass it (then the caller partitions the whole row)."""
    if row.dtype.kind == "f" and np.isnan(row).any():
        return None                               # NaN fails every comparison: leave it to sorting
    stride = max(1, row.size // 4096)
    sample = row[::stride]
    j = min(sample.size, -(-k // stride) + 1)     # about j * stride elements pass: more than k
    t = np.partition(sample, j - 1)[j - 1] if ascending else np.partition(sample, sample.size - j)[-j]
    cand = np.flatnonzero(row <= t if ascending else row >= t)
    if cand.size < k:
        return None
    # Every element of the top k passes the threshold (at least k do), and so do all elements
    # equal to the k-th: a stable order of the candidates (in index order) decides exactly.
    return cand[argsort_rows(row[cand][None, :], ascending)[0, :k]]


def topk_rows(a: np.ndarray, k: int, ascending: bool) -> np.ndarray:
    """Indices of the ``k`` first elements of each row of ``a`` in the order of ``argsort_rows``."""
    n = a.shape[1]
    if k * 8 > n:
        return argsort_rows(a, ascending)[:, :k]
    if n >= 2 ** 16 and k * 64 <= n and a.shape[0] <= 8:
        picked = [_sampled_topk(row, k, ascending) for row in a]
        if all(p is not None for p in picked):
            return np.stack(picked)
    # The k-th value of each row by a partition of the values (much faster than argpartition);
    # the elements past it, in index order, are the top k where the row has no tie at the k-th.
    t = np.partition(a, k - 1 if ascending else n - k, axis=1)[:, k - 1 if ascending else n - k, None]
    passed = a <= t if ascending else a >= t
    exact = np.count_nonzero(passed, axis=1) == k        # False for ties at t, and for a NaN t
    if not exact.all():
        passed[~exact] = False                            # those rows are sorted whole below
        passed[~exact, :k] = True
    # NOTE: flatnonzero and a subtraction, not np.nonzero: that one also builds the row indices
    # and is ten times slower.
    cols = np.flatnonzero(passed).reshape(-1, k) - np.arange(0, a.size, n)[:, None]
    idx = np.take_along_axis(cols, argsort_rows(np.take_along_axis(a, cols, axis=1), ascending), axis=1)
    if not exact.all():
        idx[~exact] = argsort_rows(a[~exact], ascending)[:, :k]
    return idx


# ---------------------------------------------------------------------------------------------
# The operators
# ---------------------------------------------------------------------------------------------

def _layout(op: str, p, shape):
    """``(axis or None, n, k)`` of ``op`` on ``shape``; MXNetError for a bad axis or k."""
    axis = p["axis"]
    if axis is not None:
        if not -len(shape) <= axis < len(shape):
            raise MXNetError(f"{op}: axis {axis} out of range for data of shape {tuple(shape)}")
        axis %= len(shape)
    n = int(np.prod(shape)) if axis is None else shape[axis]
    k = n if p.get("k", 0) <= 0 else p["k"]
    if k > n:
        raise MXNetError(f"{op}: k={k} is larger than the {n} elements along axis {p['axis']} "
                         f"of data of shape {tuple(shape)}")
    return axis, n, k


def _out_shape(op: str, p, shape, mask=False):
    axis, n, k = _layout(op, p, shape)
    if mask:
        return tuple(shape)
    return (k,) if axis is None else tuple(shape[:axis]) + (k,) + tuple(shape[axis + 1:])


def _maybe_shape(op: str, p, shape):
    return None if shape is None else _out_shape(op, p, shape)


def _rows(x: np.ndarray, axis):
    """``x`` as (batch, n) rows along ``axis``, and the function that puts rows back."""
    if axis is None:
        return x.reshape(1, -1), lambda r: r.reshape(-1)
    moved = np.moveaxis(x, axis, -1)
    lead = moved.shape[:-1]
    return moved.reshape(-1, x.shape[axis]), lambda r: np.moveaxis(r.reshape(lead + r.shape[-1:]), -1, axis)


def _check_index_dtype(op: str, dtype, n: int):
    limit = {"uint8": 255, "float16": 2048}.get(np.dtype(dtype).name)
    if limit is not None and n - 1 > limit:
        raise MXNetError(f"{op}: dtype {np.dtype(dtype).name} cannot represent the indices of "
                         f"{n} elements")


def _topk_kernel(op: str, ret_typ: str = None):
    def kernel(octx, p, inputs, outputs, req):
        x = inputs[0]
        axis, n, k = _layout(op, p, x.shape)
        ret = ret_typ or p["ret_typ"]
        if x.size == 0:
            return
        rows, back = _rows(x, axis)
        idx = topk_rows(rows, k, p["is_ascend"])
        if ret == "mask":
            mask = np.zeros(rows.shape, x.dtype)
            np.put_along_axis(mask, idx, 1, axis=1)
            assign(outputs[0], req[0], back(mask).reshape(x.shape))
            return
        if ret in ("value", "both"):
            assign(outputs[0], req[0], back(np.take_along_axis(rows, idx, axis=1)))
        io = 0 if ret == "indices" else 1
        _check_index_dtype(op, outputs[io].dtype, n)
        assign(outputs[io], req[io], back(idx))
    return kernel


def _n_outputs(p) -> int:
    return 2 if p["ret_typ"] in ("value", "both") else 1


def _topk_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return list(in_shapes), [None] * _n_outputs(p)
    out = _out_shape("topk", p, s, p["ret_typ"] == "mask")
    return list(in_shapes), [out] * _n_outputs(p)


def _topk_type(p, in_types):
    t = in_types[0]
    if p["ret_typ"] == "indices":
        return list(in_types), [p["dtype"]]
    if p["ret_typ"] == "mask":
        return list(in_types), [t]
    return list(in_types), [t, p["dtype"] if p["ret_typ"] == "both" else np.dtype(np.int32)]


def _scatter_gradient(node, ograds, params=None):
    """``_backward_topk(ograd, indices, data)``: ``data`` is read for its shape only."""
    inputs = [ograds[0], out_entries(node, 2)[1], node.inputs[0]]
    if params is None:
        n = backward_node(node, "_backward_topk", inputs)
    else:     # sort: topk's parameters for the same order
        n = make_node("_backward_topk", inputs, node.name + "_backward", params=_TOPK.parse_params(params))
        n.control_deps.append(node)
    return [out_entries(n, 1)[0]]


def _topk_gradient(node, ograds):
    if node.params["ret_typ"] in ("value", "both"):
        return _scatter_gradient(node, ograds)
    return zero_grads(node)


def _backward_topk(octx, p, inputs, outputs, req):
    g, idx, x = inputs
    axis, n, k = _layout("_backward_topk", p, x.shape)
    grad = np.zeros(x.shape, g.dtype)
    grows, back = _rows(grad, axis)
    np.put_along_axis(grows, _rows(idx.astype(np.int64), axis)[0], _rows(g, axis)[0], axis=1)
    assign(outputs[0], req[0], back(grows).reshape(x.shape))


_TOPK = register(OpDef(
    "topk", _topk_kernel("topk"), params=_TOPK_PARAMS,
    outputs=lambda p: ["output0", "output1"][:_n_outputs(p)],
    num_visible_outputs=lambda p: 2 if p["ret_typ"] == "both" else 1, infer_shape=_topk_shape,
    infer_type=_topk_type, gradient=_topk_gradient, aliases=("_npx_topk",),
    doc=__doc__ + "\n\nExample: ``topk([[.3, .2, .4], [.1, .3, .2]], k=2, ret_typ='value')`` is "
                  "``[[.4, .3], [.3, .2]]``."))
register(OpDef("_backward_topk", _backward_topk, arguments=("ograd", "indices", "data"), params=_TOPK_PARAMS,
               infer_shape=lambda p, s: (list(s), [s[2]]), infer_type=lambda p, t: (list(t), [t[0]]),
               ignore_inputs=(2,)))


def _sort_gradient(node, ograds):
    params = {"axis": node.params["axis"], "k": 0, "ret_typ": "value", "is_ascend": node.params["is_ascend"]}
    return _scatter_gradient(node, ograds, params)


register(OpDef("sort", _topk_kernel("sort", "value"), params=_SORT_PARAMS, outputs=("output", "indices"),
               num_visible_outputs=1, aliases=("_npi_sort",),
               infer_shape=lambda p, s: (list(s), [_maybe_shape("sort", p, s[0])] * 2),
               infer_type=lambda p, t: (list(t), [t[0], np.dtype(np.int32)]), gradient=_sort_gradient,
               doc="sort(data, axis=-1, is_ascend=True): a sorted copy along ``axis`` (see topk for the "
                   "order of NaN and ties); ``sort(x, axis=None)`` sorts the flattened array."))
register(OpDef("argsort", _topk_kernel("argsort", "indices"), params=_ARGSORT_PARAMS,
               aliases=("_npi_argsort",),
               infer_shape=lambda p, s: (list(s), [_maybe_shape("argsort", p, s[0])]),
               infer_type=lambda p, t: (list(t), [p["dtype"]]), gradient=zero_grads,
               doc="argsort(data, axis=-1, is_ascend=True, dtype='float32'): the indices that sort "
                   "``data`` along ``axis`` (stable; NaN sorts last)."))
