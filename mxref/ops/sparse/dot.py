"""Sparse ``dot``: csr·dense → dense, csrᵀ·dense → row_sparse, csr·row_sparse → dense,
dense·csr → csr (``forward_stype='default'``: dense), as MXNet's CPU storage rules.

Math, for a csr ``A`` with entries ``(i, k, v)``::

    (A B)[i]   = sum over entries of row i of v * B[k]          gather rows of B, segment-sum
    (Aᵀ B)[k]  = sum over entries in column k of v * B[i]       scatter by column: row_sparse
    (D A)[:, n] = sum over entries in column n of v * D[:, k]    = ((Aᵀ Dᵀ))ᵀ

Gradients (``_backward_dot``): with ``C = A B``, ``dB = Aᵀ dC`` (row_sparse: only the rows of
``B`` that ``A`` touches) and ``dA`` is taken at ``A``'s stored entries only
(``dA[i, k] = dC[i] · B[k]``, a csr with ``A``'s pattern; MXNet refuses to compute it at all).

The numpy kernels here are the reference; ``_ext/sparse_kernels.pyx`` has the fast loops for
float32/float64 csr·dense and csrᵀ·dense, chosen unless the switch says reference only.
"""
from __future__ import annotations

import numpy as np

from ..._ext import loader as _loader
from ..._ext import switch as _switch
from .. import (
    linalg,  # noqa: F401 - registers 'dot' / '_backward_dot' first
    parallel,
)
from ..parallel import parallel_for
from ..registry import assign
from .base import CSR, IDX, RowSparse, fromdense, register_storage, todense

# -------------------------------------------------------------------------------------------
# Reference kernels (numpy, vectorised): every fast path is compared with these
# -------------------------------------------------------------------------------------------


def csr_dns(a: CSR, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for csr ``a`` (M, K) and dense ``b`` (K, N): gather, scale, segment-sum by row."""
    out = np.zeros((a.shape[0], b.shape[1]), np.result_type(a.data, b))
    if a.data.size:
        nonempty = np.flatnonzero(np.diff(a.indptr))
        prod = b[a.indices]
        prod *= a.data[:, None]
        out[nonempty] = np.add.reduceat(prod, a.indptr[nonempty], axis=0)
    return out


def csrt_dns(a: CSR, b: np.ndarray) -> RowSparse:
    """``a.T @ b`` for csr ``a`` (M, K) and dense ``b`` (M, N): a row_sparse (K, N) whose rows
    are the columns ``a`` uses, summed in the order of the entries (stable sort by column)."""
    dtype = np.result_type(a.data, b)
    if not a.data.size:
        return RowSparse(np.zeros((0, b.shape[1]), dtype), np.zeros(0, IDX), (a.shape[1], b.shape[1]))
    order = np.argsort(a.indices, kind="stable")
    cols = a.indices[order]
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    prod = b[a.row_ids()[order]]
    prod *= a.data[order][:, None]
    return RowSparse(np.add.reduceat(prod, starts, axis=0).astype(dtype, copy=False),
                     cols[starts].astype(IDX), (a.shape[1], b.shape[1]))


def sampled(a: CSR, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``(left @ right.T)[i, k]`` at every stored entry ``(i, k)`` of ``a``: the entries' values."""
    if not a.data.size:
        return np.zeros(0, left.dtype)
    return np.einsum("ij,ij->i", left[a.row_ids()], right[a.indices])


def csr_rsp(a: CSR, b: RowSparse) -> np.ndarray:
    """``a @ b`` for a row_sparse ``b``: entries whose column is not a stored row of ``b`` add 0."""
    rows = b.data.reshape(b.data.shape[0], -1)
    from .indexing import holds_all_rows  # noqa: PLC0415 - sibling module, imported late
    if holds_all_rows(b):      # a weight holding every row: a dense product
        return _csr_dns(a, np.ascontiguousarray(rows))
    pos = np.searchsorted(b.indices, a.indices)
    hit = pos < b.indices.size
    hit[hit] = b.indices[pos[hit]] == a.indices[hit]
    dtype = np.result_type(a.data, rows)
    data = np.where(hit, a.data, 0).astype(dtype)
    padded = np.vstack([rows, np.zeros((1, rows.shape[1]), rows.dtype)])     # row -1: zeros
    return csr_dns(CSR(data, np.where(hit, pos, rows.shape[0]), a.indptr, a.shape), padded)


def _rows_of(x, n_rows: int, n_cols: int) -> np.ndarray:
    """A dense (n_rows, n_cols) view of a dense or row_sparse operand."""
    return todense(x).reshape(n_rows, n_cols)


# Fast paths (Cython), used where they exist and the switch allows.
_fast = _loader.load("sparse_kernels")


def _use_fast(a: CSR, b: np.ndarray) -> bool:
    return (_fast is not None and not _switch.reference_only() and a.data.dtype == b.dtype
            and b.dtype in (np.float32, np.float64) and b.flags.c_contiguous
            and a.data.flags.c_contiguous and a.indices.dtype == IDX and a.indptr.dtype == IDX)


def _csr_dns(a, b):
    if _use_fast(a, b):
        out = np.zeros((a.shape[0], b.shape[1]), b.dtype)
        rows = a.shape[0]
        work = max(1, a.data.size * b.shape[1] // max(rows, 1))
        parallel_for(rows, lambda lo, hi: _fast.csr_dns_rows(a.data, a.indices, a.indptr, b, out, lo, hi),
                     work_per_item=work)
        return out
    return csr_dns(a, b)


def unique_columns(indices: np.ndarray, ncols: int):
    """``np.unique(indices, return_inverse=True)`` (sorted distinct column ids and each entry's
    place among them); with the fast loops, by a radix sort of the entries (no sort of a
    comparison kind, and nothing the size of the column count)."""
    if _fast is None or _switch.reference_only():
        cols, slot = np.unique(indices, return_inverse=True)
        return cols, slot.reshape(-1)
    n = indices.size
    cols, slot = np.empty(n, IDX), np.empty(n, IDX)
    k = _fast.unique_columns(indices, ncols, cols, slot, np.empty(n, IDX), np.empty(n, IDX))
    return cols[:k], slot


def _csrt_dns(a, b):
    if _use_fast(a, b) and a.data.size:
        cols, slot = unique_columns(a.indices, a.shape[1])
        rows = np.zeros((cols.size, b.shape[1]), b.dtype)
        # Threads take disjoint ranges of result rows (two ranges of csr rows could both add
        # into one result row); each scans the entries and adds only into its own rows.
        if parallel.NUM_THREADS > 1 and a.data.size * b.shape[1] >= 2 * parallel.MIN_WORK_PER_THREAD:
            per_row = max(1, a.data.size * b.shape[1] // cols.size)
            parallel_for(cols.size, lambda lo, hi: _fast.csrt_dns_scatter_slots(
                a.data, slot, a.indptr, b, rows, lo, hi), work_per_item=per_row)
        else:
            _fast.csrt_dns_scatter(a.data, slot, a.indptr, b, rows, 0, a.shape[0])
        return RowSparse(rows, cols.astype(IDX), (a.shape[1], b.shape[1]))
    return csrt_dns(a, b)


# -------------------------------------------------------------------------------------------
# Storage rules and the forward kernel
# -------------------------------------------------------------------------------------------

def _dot_storage(params, in_stypes):
    ta, tb, fwd = params["transpose_a"], params["transpose_b"], params["forward_stype"]
    pair = tuple(in_stypes)
    if pair == ("csr", "default") and not tb:
        return [fwd or ("row_sparse" if ta else "default")]
    if pair == ("csr", "row_sparse") and not ta and not tb:
        return [fwd or "default"]
    if pair == ("default", "csr") and not ta and not tb:
        return [fwd or "csr"]
    return None


def _as_stype(value, stype: str, shape):
    if stype == "default":
        return todense(value).reshape(shape) if not isinstance(value, np.ndarray) else value.reshape(shape)
    if isinstance(value, np.ndarray):
        return fromdense(value.reshape(shape), stype)
    return value if value.stype == stype else fromdense(todense(value), stype)


def _dot_value(params, lhs, rhs):
    """The product as the kernel that fits the operands computes it (dense, or row_sparse)."""
    if isinstance(lhs, CSR):
        if isinstance(rhs, RowSparse):
            return csr_rsp(lhs, rhs)
        b = rhs.reshape(rhs.shape[0], -1)
        return _csrt_dns(lhs, b) if params["transpose_a"] else _csr_dns(lhs, b)
    # dense · csr = (csrᵀ · denseᵀ)ᵀ
    d = lhs.reshape(-1, lhs.shape[-1])
    return todense(_csrt_dns(rhs, np.ascontiguousarray(d.T))).T


def _set(out, value) -> None:
    for field in out.__slots__[:-1]:
        setattr(out, field, getattr(value, field))


def _dot_ex(octx, params, inputs, outputs, req):
    out = outputs[0]
    value = _dot_value(params, *inputs)
    if isinstance(out, np.ndarray):
        assign(out, req[0], _as_stype(value, "default", out.shape))
    else:
        _set(out, _as_stype(value, out.stype, out.shape))


register_storage("dot", _dot_storage, _dot_ex)


# -------------------------------------------------------------------------------------------
# Backward: dB = Aᵀ dC (row_sparse), dA at A's stored entries (csr)
# -------------------------------------------------------------------------------------------

def _backward_storage(params, in_stypes):
    g, lhs, rhs = in_stypes
    ta, tb = params["transpose_a"], params["transpose_b"]
    if tb or g == "csr":
        return None
    if lhs == "csr" and rhs in ("default", "row_sparse") and g in ("default", "row_sparse") \
            and not (ta and rhs == "row_sparse"):
        return ["csr", "default" if ta else "row_sparse"]
    if lhs == "default" and rhs == "csr" and g == "default" and not ta:
        return ["default", "csr"]
    return None


def _rows_at(rhs, ids: np.ndarray) -> np.ndarray:
    """``dense(rhs)[ids]`` as a matrix, for a dense or row_sparse ``rhs``."""
    if isinstance(rhs, RowSparse):
        from .indexing import gather_rows  # noqa: PLC0415 - sibling module, imported late
        return gather_rows(rhs, ids).reshape(ids.size, -1)
    return rhs.reshape(rhs.shape[0], -1)[ids]


def _set_csr_like(out, pattern: CSR, vals: np.ndarray) -> None:
    out.data, out.indices, out.indptr = vals.astype(pattern.data.dtype), np.copy(pattern.indices), \
        np.copy(pattern.indptr)


def _backward_ex(octx, params, inputs, outputs, req):
    g, lhs, rhs = inputs
    dl, dr = outputs
    if isinstance(lhs, CSR):
        n = int(np.prod(rhs.shape[1:], dtype=np.int64)) if len(rhs.shape) > 1 else 1
        if params["transpose_a"]:         # C = Aᵀ B: dB = A dC, dA[i, k] = B[i] · dC[k]
            b = rhs.reshape(rhs.shape[0], -1)
            gd = _rows_of(g, lhs.shape[1], n)
            if req[1] != "null":
                assign(dr, req[1], _csr_dns(lhs, np.ascontiguousarray(gd)).reshape(dr.shape))
            if req[0] != "null":
                _set_csr_like(dl, lhs, sampled(lhs, b, gd))
            return
        gd = _rows_of(g, lhs.shape[0], n)   # C = A B: dB = Aᵀ dC, dA[i, k] = dC[i] · B[k]
        if req[1] != "null":
            _set(dr, _csrt_dns(lhs, np.ascontiguousarray(gd)))
        if req[0] != "null":
            vals = np.einsum("ij,ij->i", gd[lhs.row_ids()], _rows_at(rhs, lhs.indices)) \
                if lhs.data.size else np.zeros(0, gd.dtype)
            _set_csr_like(dl, lhs, vals)
        return
    # C = D A (A csr): dD = dC Aᵀ = (A dCᵀ)ᵀ, dA[k, n] = D[:, k] · dC[:, n]
    d = lhs.reshape(-1, lhs.shape[-1])
    gm = g.reshape(d.shape[0], -1)
    if req[0] != "null":
        assign(dl, req[0], _csr_dns(rhs, np.ascontiguousarray(gm.T)).T.reshape(dl.shape))
    if req[1] != "null":
        _set_csr_like(dr, rhs, sampled(rhs, np.ascontiguousarray(d.T), np.ascontiguousarray(gm.T)))


register_storage("_backward_dot", _backward_storage, _backward_ex)
