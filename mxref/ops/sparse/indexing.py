"""Row lookups with row_sparse gradients: ``Embedding(sparse_grad=True)``, ``take`` of a
row_sparse array, and ``where`` with a csr condition.

Math: ``Embedding`` / ``take(axis=0)`` gather rows ``w[idx]``; a row_sparse ``w`` gives zeros
for rows it does not store. The gradient ``dw[i] = sum over positions p with idx[p] == i of
dout[p]`` is nonzero only on the ids the batch used, so with ``sparse_grad=True`` (or a
row_sparse ``w`` for ``take``) ``_backward_*`` returns it row_sparse: the unique ids, sorted, and
their summed rows, as MXNet's ``SparseEmbeddingOpBackwardRspImpl`` (duplicate ids are summed).
``where(cond, x, y)`` with a csr ``cond`` takes ``x`` at its stored nonzero entries, ``y`` elsewhere.
"""
from __future__ import annotations

import numpy as np

from .. import indexing  # noqa: F401 - registers 'take' / 'where' first
from ..nn import embedding  # noqa: F401 - registers 'Embedding' first
from ..registry import assign
from .base import CSR, IDX, RowSparse, register_storage


def holds_all_rows(w: RowSparse) -> bool:
    """Whether ``w`` stores every row (its sorted unique ids are then ``0..n-1``)."""
    n = w.shape[0]
    return w.indices.size == n and (n == 0 or int(w.indices[-1]) == n - 1)


def gather_rows(w: RowSparse, ids: np.ndarray) -> np.ndarray:
    """``dense(w)[ids]`` without making ``w`` dense: missing rows read as zeros."""
    flat = ids.reshape(-1)
    if holds_all_rows(w):      # a weight: row i is data[i], no search needed
        return w.data[flat].reshape(tuple(ids.shape) + tuple(w.shape[1:]))
    pos = np.searchsorted(w.indices, flat)
    hit = pos < w.indices.size
    hit[hit] = w.indices[pos[hit]] == flat[hit]
    out = np.zeros((flat.size,) + tuple(w.shape[1:]), w.data.dtype)
    out[hit] = w.data[pos[hit]]
    return out.reshape(tuple(ids.shape) + tuple(w.shape[1:]))


def scatter_rows(ids: np.ndarray, rows: np.ndarray, shape) -> RowSparse:
    """The row_sparse sum of ``rows[p]`` into row ``ids[p]`` (ids unsorted, repeated or not)."""
    flat = ids.reshape(-1).astype(IDX)
    rows = rows.reshape((flat.size,) + tuple(shape[1:]))
    if not flat.size:
        return RowSparse(np.zeros((0,) + tuple(shape[1:]), rows.dtype), np.zeros(0, IDX), shape)
    order = np.argsort(flat, kind="stable")
    sorted_ids = flat[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    summed = np.add.reduceat(rows[order], starts, axis=0)
    return RowSparse(summed.astype(rows.dtype, copy=False), sorted_ids[starts], shape)


# -------------------------------------------------------------------------------------------
# Embedding: a row_sparse weight reads zeros for missing rows; sparse_grad gives a row_sparse dW
# -------------------------------------------------------------------------------------------

def _embedding_storage(params, in_stypes):
    return ["default"] if tuple(in_stypes) == ("default", "row_sparse") else None


def _embedding_ex(octx, params, inputs, outputs, req):
    data, w = inputs
    idx = np.clip(data.astype(np.int64), 0, params["input_dim"] - 1)
    assign(outputs[0], req[0], gather_rows(w, idx))


def _embedding_backward_storage(params, in_stypes):
    if not params["sparse_grad"] or tuple(in_stypes) != ("default", "default"):
        return None
    return ["row_sparse"]


def _embedding_backward_ex(octx, params, inputs, outputs, req):
    og, data = inputs
    idx = np.clip(data.astype(np.int64), 0, params["input_dim"] - 1)
    g = scatter_rows(idx, og, outputs[0].shape)
    outputs[0].data, outputs[0].indices = g.data, g.indices


register_storage("Embedding", _embedding_storage, _embedding_ex)
register_storage("_backward_Embedding", _embedding_backward_storage, _embedding_backward_ex,
                 sparse_from_dense=True)


# -------------------------------------------------------------------------------------------
# take(a, indices, axis=0) of a row_sparse a: dense rows forward, row_sparse gradient
# -------------------------------------------------------------------------------------------

def _ids(params, idx, n):
    idx = idx.astype(np.int64)
    return np.mod(idx, n) if params["mode"] == "wrap" else np.clip(idx, 0, n - 1)


def _take_storage(params, in_stypes):
    ok = tuple(in_stypes) == ("row_sparse", "default") and params["axis"] == 0 and params["mode"] != "raise"
    return ["default"] if ok else None


def _take_ex(octx, params, inputs, outputs, req):
    w, idx = inputs
    assign(outputs[0], req[0], gather_rows(w, _ids(params, idx, w.shape[0])))


def _take_backward_storage(params, in_stypes):
    ok = tuple(in_stypes) == ("default", "row_sparse", "default") and params["axis"] == 0 \
        and params["mode"] != "raise"
    return ["row_sparse", "default"] if ok else None


def _take_backward_ex(octx, params, inputs, outputs, req):
    og, w, idx = inputs
    g = scatter_rows(_ids(params, idx, w.shape[0]), og, w.shape)
    outputs[0].data, outputs[0].indices = g.data, g.indices
    assign(outputs[1], req[1], 0)


register_storage("take", _take_storage, _take_ex)
register_storage("_backward_take", _take_backward_storage, _take_backward_ex)


# -------------------------------------------------------------------------------------------
# where(csr condition, x, y): dense
# -------------------------------------------------------------------------------------------

def _where_storage(params, in_stypes):
    return ["default"] if tuple(in_stypes) == ("csr", "default", "default") else None


def _where_ex(octx, params, inputs, outputs, req):
    cond, x, y = inputs
    res = np.array(y, copy=True)
    rows = cond.row_ids()[cond.data != 0]
    cols = cond.indices[cond.data != 0]
    res[rows, cols] = x[rows, cols]
    assign(outputs[0], req[0], res)


register_storage("where", _where_storage, _where_ex)

__all__ = ["gather_rows", "scatter_rows", "holds_all_rows", "CSR"]
