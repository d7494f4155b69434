"""row_sparse keys in the stores: reading and writing RowSparseNDArrays inside engine operations,
and the single-process stores' lazy row table.

A key initialised with a ``RowSparseNDArray`` is a row_sparse key. ``push`` takes row_sparse
values (one per device: their rows are summed by id, duplicates too), ``row_sparse_pull(key,
out, row_ids)`` fills ``out`` with just the rows ``row_ids`` (unsorted, repeated ids allowed: the
result holds each id once, sorted, rows never pushed being zeros), and a plain ``pull`` gives the
whole value (into a dense ``out``; into a row_sparse ``out`` only with ``ignore_sparse=False``,
as MXNet 1.9.1).

The ``local`` and ``device`` stores keep a row_sparse key in a ``RowStore`` (memory in proportion
to the rows ever pushed), and apply the optimizer lazily to the rows a push touches
(``LazyRowUpdater``), exactly as the parameter servers do; so the three operations are the
same engine operations on every single-process store, ordered by one engine variable per key.
"""
from __future__ import annotations

import math
from typing import List, Optional

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..context import cpu
from ..ndarray import NDArray
from .row_store import LazyRowUpdater, RowGrad, RowStore, sum_rows

__all__ = ["is_row_sparse", "read_rows", "write_rows", "summed_rows", "unique_ids", "RowSparseKey"]


def is_row_sparse(a) -> bool:
    return getattr(a, "stype", "default") == "row_sparse"


def row_len(shape) -> int:
    return int(math.prod(shape[1:]))


def read_rows(a: NDArray) -> RowGrad:
    """The rows a RowSparseNDArray holds, as ``(ids, rows 2-D)`` (inside an engine op)."""
    v = a._value()
    ids = np.asarray(v.indices, np.int64)
    return RowGrad(ids, np.asarray(v.data).reshape(ids.size, row_len(a.shape)))


def write_rows(out: NDArray, ids: np.ndarray, rows: np.ndarray) -> None:
    """Make ``out`` (a RowSparseNDArray) hold ``rows`` at ``ids`` (inside an engine op writing it)."""
    from ..ops.sparse.base import RowSparse  # noqa: PLC0415 - the sparse value container
    shape = out.shape
    out._store(RowSparse(np.ascontiguousarray(rows, out._dtype).reshape((ids.size,) + shape[1:]),
                         np.ascontiguousarray(ids, np.int64), shape))


def write_dense(out: NDArray, ids: np.ndarray, rows: np.ndarray) -> None:
    """Make dense ``out`` the array whose rows ``ids`` are ``rows`` and whose other rows are 0."""
    dst = out._data().reshape(out.shape[0], -1)
    dst[...] = 0
    dst[ids] = rows


def summed_rows(values: List[NDArray]) -> RowGrad:
    """The rows of several row_sparse values summed by id (inside an op reading them)."""
    parts = [read_rows(v) for v in values]
    if len(parts) == 1:
        return sum_rows(parts[0].ids, parts[0].rows)
    return sum_rows(np.concatenate([p.ids for p in parts]), np.concatenate([p.rows for p in parts]))


def unique_ids(row_ids: NDArray, num_rows: int, key) -> np.ndarray:
    """``row_ids``' values as sorted unique int64 ids, checked against ``[0, num_rows)``."""
    raw = row_ids._data().reshape(-1)
    ids = np.unique(raw.astype(np.int64))
    if ids.size and (ids[0] < 0 or ids[-1] >= num_rows or not np.array_equal(ids, np.unique(raw))):
        bad = [x for x in np.unique(raw).tolist() if not (0 <= x < num_rows and float(x).is_integer())]
        raise MXNetError(f"kvstore.row_sparse_pull: key {key!r}: row ids {bad[:5]} are not rows "
                         f"of [0, {num_rows})")
    return ids


class RowSparseKey:
    """One row_sparse key of a single-process store: its lazy rows and its ordering variable.

    ``order`` is a 1-element NDArray that every operation on the key writes, so the engine runs
    them in call order (the key's values live outside any NDArray).
    """

    def __init__(self, key, shape, dtype):
        self.key, self.shape, self.dtype = key, tuple(shape), np.dtype(dtype)
        self.store = RowStore(shape[0], row_len(shape), dtype)
        self.order = nd.zeros((1,), cpu(0))
        self.lazy: Optional[LazyRowUpdater] = None

    def wait_to_read(self) -> None:
        self.order.wait_to_read()

    @property
    def nbytes(self) -> int:
        return self.store.nbytes + (self.lazy.nbytes if self.lazy is not None else 0)

    def apply(self, grad: RowGrad, updater) -> None:
        """Without an updater the sum replaces the value; with one, the touched rows update."""
        if updater is None:
            self.store.clear()
            self.store.scatter(grad.ids, grad.rows)
            return
        if self.lazy is None:
            optimizer = getattr(updater, "optimizer", None)
            if optimizer is None:
                raise MXNetError(f"kvstore: row_sparse key {self.key!r} is updated lazily by an "
                                 "optimizer (kv.set_optimizer); a plain updater function cannot do that")
            self.lazy = LazyRowUpdater(optimizer, self.key, self.store.row_len, self.dtype,
                                       self.store.num_rows)
        self.lazy.update(self.store, grad)
