"""The sparse constructors of ``mx.nd.sparse`` (``csr_matrix``, ``row_sparse_array``, ``zeros``,
``empty``, ``array``) and the checks that components describe a valid array.

Every constructor validates its components before an array is made (errors name the field at
fault); sources are (data, indices, indptr) / (data, (row, col)) / (data, indices) tuples, dense
numpy arrays or NDArrays, sparse NDArrays, and ``scipy.sparse`` matrices (anything with ``tocsr``
and ``nnz``). ``mxref/ndarray/sparse.py`` re-exports them.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError, normalize_dtype
from ..ops.sparse.base import CSR, IDX, RowSparse, empty_of, fromdense
from .ndarray import NDArray
from .sparse import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, _from_value, new_sparse
from .utils import _ctx, _shape
from .utils import zeros as dense_zeros

__all__ = ["csr_matrix", "row_sparse_array", "zeros", "empty", "array"]

_FLOAT32 = np.dtype(np.float32)


def _check(stype: str, fields, shape, what: str) -> None:
    """Validate components before they become an array; errors name the field at fault."""
    if stype == "csr":
        data, indptr, indices = fields
        if len(shape) != 2:
            raise MXNetError(f"{what}: csr shape must be 2-D, got {tuple(shape)}")
        if indptr.ndim != 1 or indptr.size != shape[0] + 1:
            raise MXNetError(f"{what}: indptr must have shape[0] + 1 = {shape[0] + 1} entries, "
                             f"got {indptr.shape}")
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0):
            raise MXNetError(f"{what}: indptr must start at 0 and never decrease, got {indptr.tolist()[:16]}")
        if data.shape != (indptr[-1],) or indices.shape != (indptr[-1],):
            raise MXNetError(f"{what}: data {data.shape} and indices {indices.shape} must both hold "
                             f"indptr[-1] = {int(indptr[-1])} entries")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
            raise MXNetError(f"{what}: column indices must lie in [0, {shape[1]}), got "
                             f"[{int(indices.min())}, {int(indices.max())}]")
    else:
        data, indices = fields
        if indices.ndim != 1 or data.shape != (indices.size,) + tuple(shape[1:]):
            raise MXNetError(f"{what}: row_sparse data must have shape (len(indices),) + "
                             f"{tuple(shape[1:])} = {(indices.size,) + tuple(shape[1:])}, got {data.shape}")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
            raise MXNetError(f"{what}: row indices must lie in [0, {shape[0]}), got "
                             f"[{int(indices.min())}, {int(indices.max())}]")
        if indices.size > 1 and np.any(np.diff(indices) <= 0):
            raise MXNetError(f"{what}: row indices must be sorted and unique")


def _host(x, dtype=None) -> np.ndarray:
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x, dtype=dtype)


def _default_dtype(source, dtype):
    if dtype is not None:
        return normalize_dtype(dtype)
    if isinstance(source, (np.ndarray, NDArray)):
        return np.dtype(source.dtype)
    return _FLOAT32


def _is_scipy_sparse(x) -> bool:
    return hasattr(x, "tocsr") and hasattr(x, "nnz")


def csr_matrix(arg1, shape=None, ctx=None, dtype=None) -> CSRNDArray:
    """A ``CSRNDArray`` from ``(data, indices, indptr)``, ``(data, (row, col))`` (COO),
    a ``(rows, cols)`` shape (all zeros), a dense numpy array or NDArray, a CSRNDArray, or a
    ``scipy.sparse`` matrix. The dtype is the source's for arrays, else float32."""
    if isinstance(arg1, CSRNDArray):
        return arg1.copyto(_ctx(ctx)) if dtype is None else arg1.astype(dtype)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr()
        m.sum_duplicates()    # also sorts the column ids of each row
        dt = normalize_dtype(dtype) if dtype is not None else np.dtype(m.dtype)
        return csr_matrix((m.data, m.indices, m.indptr), shape=m.shape, ctx=ctx, dtype=dt)
    if isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(d, (int, np.integer)) for d in arg1):
        return zeros("csr", arg1, ctx, dtype)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        dt = _default_dtype(arg1[0], dtype)
        data, indices, indptr = _host(arg1[0], dt).astype(dt), _host(arg1[1]), _host(arg1[2])
        if shape is None:
            shape = (indptr.size - 1, int(indices.max()) + 1 if indices.size else 0)
        fields = [data.reshape(-1), indptr.astype(IDX), indices.astype(IDX)]
        _check("csr", fields, tuple(shape), "csr_matrix")
        return _from_value(CSR(fields[0], fields[2], fields[1], tuple(shape)), ctx, dt)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        dt = _default_dtype(arg1[0], dtype)
        data = _host(arg1[0], dt).astype(dt).reshape(-1)
        row, col = (_host(v).astype(IDX).reshape(-1) for v in arg1[1])
        if shape is None:
            shape = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
        if not (data.size == row.size == col.size):
            raise MXNetError(f"csr_matrix: data, row and col must have one length, got "
                             f"{data.size}, {row.size}, {col.size}")
        if row.size and (row.min() < 0 or row.max() >= shape[0] or col.min() < 0 or col.max() >= shape[1]):
            raise MXNetError(f"csr_matrix: (row, col) coordinates out of range for shape {tuple(shape)}")
        dense = np.zeros(shape, dt)
        np.add.at(dense, (row, col), data)    # duplicates sum, as scipy's coo -> csr
        return _from_value(fromdense(dense, "csr"), ctx, dt)
    dt = _default_dtype(arg1, dtype)
    dense = _host(arg1, dt).astype(dt)
    if shape is not None and tuple(shape) != dense.shape:
        raise MXNetError(f"csr_matrix: shape {tuple(shape)} does not match the source's {dense.shape}")
    if dense.ndim != 2:
        raise MXNetError(f"csr_matrix: a dense source must be 2-D, got shape {dense.shape}")
    return _from_value(fromdense(dense, "csr"), ctx, dt)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None) -> RowSparseNDArray:
    """A ``RowSparseNDArray`` from ``(data, indices)``, a shape (all zeros), a dense numpy array
    or NDArray, or a RowSparseNDArray. Unsorted ids are sorted; duplicate ids are summed."""
    if isinstance(arg1, RowSparseNDArray):
        return arg1.copyto(_ctx(ctx)) if dtype is None else arg1.astype(dtype)
    if isinstance(arg1, tuple) and arg1 and all(isinstance(d, (int, np.integer)) for d in arg1):
        return zeros("row_sparse", arg1, ctx, dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        dt = _default_dtype(arg1[0], dtype)
        data, indices = _host(arg1[0], dt).astype(dt), _host(arg1[1]).astype(IDX).reshape(-1)
        if data.ndim == 0 or data.shape[0] != indices.size:
            raise MXNetError(f"row_sparse_array: data has shape {data.shape} but there are "
                             f"{indices.size} indices (one row of data per index)")
        if shape is None:
            shape = (int(indices.max()) + 1 if indices.size else 0,) + data.shape[1:]
        shape = tuple(int(d) for d in shape)
        if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
            raise MXNetError(f"row_sparse_array: row indices must lie in [0, {shape[0]}), got "
                             f"[{int(indices.min())}, {int(indices.max())}]")
        if indices.size > 1 and np.any(np.diff(indices) <= 0):
            uniq, inverse = np.unique(indices, return_inverse=True)
            merged = np.zeros((uniq.size,) + data.shape[1:], dt)
            np.add.at(merged, inverse, data)
            data, indices = merged, uniq
        _check("row_sparse", [data, indices], shape, "row_sparse_array")
        return _from_value(RowSparse(data, indices, shape), ctx, dt)
    dt = _default_dtype(arg1, dtype)
    dense = _host(arg1, dt).astype(dt)
    if shape is not None and tuple(shape) != dense.shape:
        raise MXNetError(f"row_sparse_array: shape {tuple(shape)} does not match the source's {dense.shape}")
    return _from_value(fromdense(dense, "row_sparse"), ctx, dt)


def zeros(stype: str, shape, ctx=None, dtype=None, **kwargs) -> NDArray:
    """An all-zero array of ``stype`` ('default', 'row_sparse' or 'csr'): no stored entries."""
    shape = _shape(shape, "sparse.zeros")
    if stype in (None, "default"):
        return dense_zeros(shape, ctx, dtype, **kwargs)
    arr = new_sparse(stype, shape, _ctx(ctx), _FLOAT32 if dtype is None else normalize_dtype(dtype))
    arr._store(empty_of(stype, shape, arr._dtype))
    return arr


def empty(stype: str, shape, ctx=None, dtype=None) -> NDArray:
    """As ``zeros``: a sparse array with no stored entries is all zeros."""
    return zeros(stype, shape, ctx, dtype)


def array(source_array, ctx=None, dtype=None) -> BaseSparseNDArray:
    """A sparse array from a sparse NDArray or a ``scipy.sparse`` matrix (csr for anything but a
    RowSparseNDArray), as ``mx.nd.sparse.array``."""
    if isinstance(source_array, RowSparseNDArray):
        return row_sparse_array(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, CSRNDArray) or _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise MXNetError(f"sparse.array: expected a sparse NDArray or a scipy.sparse matrix, got "
                     f"{type(source_array).__name__} (use csr_matrix / row_sparse_array for dense input)")


