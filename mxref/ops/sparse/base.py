"""Sparse values as sparse kernels see them (``CSR``, ``RowSparse``) and ``register_storage``.

A sparse kernel (MXNet's ``FComputeEx``) works on numpy containers, never on NDArrays, as dense
kernels do (operators know nothing of arrays). Its inputs are numpy arrays (``default``), ``CSR``
or ``RowSparse``; its outputs are numpy arrays to write into (``default``) or containers whose
fields it *replaces* (a sparse result's size is known only when it is computed) or updates in
place (a lazy optimizer writing the touched rows). The caller (``ndarray/storage_dispatch.py``)
copies replaced fields into fresh pool memory afterwards.

Layout, as MXNet's:

* ``CSR``: ``data`` (nnz,), ``indices`` (nnz,) column ids, ``indptr`` (rows + 1,) with row ``i``
  holding ``data[indptr[i]:indptr[i+1]]``; ids are int64, sorted within a row.
* ``RowSparse``: ``data`` (k,) + shape[1:], the stored rows, and ``indices`` (k,) their row ids,
  int64, sorted and unique (kernels that make one keep them so).
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

from ...base import MXNetError
from .. import registry

__all__ = ["CSR", "RowSparse", "IDX", "todense", "fromdense", "stype_of", "register_storage",
           "empty_of"]

IDX = np.dtype(np.int64)     # MXNet's default index dtype for both sparse formats
STYPES = ("default", "row_sparse", "csr")


class _Components:
    """What both sparse formats derive from their components: the dtype (of ``data``) and ``ndim``."""

    __slots__ = ()

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


class CSR(_Components):
    """A compressed-sparse-row matrix: ``data``, ``indices``, ``indptr`` and the dense ``shape``."""

    __slots__ = ("data", "indices", "indptr", "shape")
    stype = "csr"

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: Tuple[int, ...]):
        self.data, self.indices, self.indptr, self.shape = data, indices, indptr, tuple(shape)

    @staticmethod
    def empty(shape, dtype) -> "CSR":
        return CSR(np.zeros(0, dtype), np.zeros(0, IDX), np.zeros(shape[0] + 1, IDX), shape)

    def row_ids(self) -> np.ndarray:
        """The row of every stored value (``indptr`` expanded), for vectorised kernels."""
        return np.repeat(np.arange(self.shape[0], dtype=IDX), np.diff(self.indptr))


class RowSparse(_Components):
    """Some rows of a dense array: ``data`` (the rows), ``indices`` (their ids) and the ``shape``."""

    __slots__ = ("data", "indices", "shape")
    stype = "row_sparse"

    def __init__(self, data: np.ndarray, indices: np.ndarray, shape: Tuple[int, ...]):
        self.data, self.indices, self.shape = data, indices, tuple(shape)

    @staticmethod
    def empty(shape, dtype) -> "RowSparse":
        return RowSparse(np.zeros((0,) + tuple(shape[1:]), dtype), np.zeros(0, IDX), shape)


def stype_of(x) -> str:
    return getattr(x, "stype", "default")


def empty_of(stype: str, shape, dtype):
    """An all-zero value of ``stype`` (no stored entries)."""
    if stype == "csr":
        return CSR.empty(shape, dtype)
    if stype == "row_sparse":
        return RowSparse.empty(shape, dtype)
    return np.zeros(shape, dtype)


def todense(x) -> np.ndarray:
    """The dense numpy array a value stands for (a dense array is returned as it is)."""
    if isinstance(x, CSR):
        out = np.zeros(x.shape, x.data.dtype)
        if x.data.size:
            out[x.row_ids(), x.indices] = x.data
        return out
    if isinstance(x, RowSparse):
        out = np.zeros(x.shape, x.data.dtype)
        out[x.indices] = x.data
        return out
    return x


def fromdense(a: np.ndarray, stype: str):
    """``a`` in ``stype``: csr keeps the nonzero entries, row_sparse the rows with a nonzero."""
    if stype == "default":
        return a
    if stype == "csr":
        if a.ndim != 2:
            raise MXNetError(f"cast_storage: csr needs a 2-D array, got shape {a.shape}")
        rows, cols = np.nonzero(a)
        indptr = np.zeros(a.shape[0] + 1, IDX)
        np.cumsum(np.bincount(rows, minlength=a.shape[0]), out=indptr[1:])
        return CSR(a[rows, cols], cols.astype(IDX), indptr, a.shape)
    if stype == "row_sparse":
        if a.ndim == 0:
            raise MXNetError("cast_storage: row_sparse needs at least 1 dimension, got a 0-d array")
        flat = a.reshape(a.shape[0], -1)
        keep = np.flatnonzero(np.any(flat != 0, axis=1)).astype(IDX)
        return RowSparse(a[keep], keep, a.shape)
    raise MXNetError(f"unknown storage type {stype!r} (expected one of {list(STYPES)})")


def register_storage(names, infer_storage: Callable[[dict, List[str]], Optional[List[str]]],
                     fcompute_ex: Callable, sparse_from_dense: bool = False) -> None:
    """Give the registered operators ``names`` a sparse kernel for the storage types that
    ``infer_storage(params, in_stypes)`` accepts (it returns the output stypes, or ``None`` to
    let the call fall back to dense)."""
    for name in ([names] if isinstance(names, str) else names):
        op = registry.get(name)
        op.infer_storage = infer_storage
        op.fcompute_ex = fcompute_ex
        op.sparse_from_dense = sparse_from_dense

