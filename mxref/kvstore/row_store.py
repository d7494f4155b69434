"""The lazy store of a row_sparse key (on a server, or in a local store): only rows ever pushed take memory.

MXNet's server allocates a row_sparse key densely (``num_rows x row_len``), so a 10^9 x 8
embedding needs 32 GB per server before the first push. Here a part keeps

    ids     sorted int64 row ids held so far (local to the part: 0 .. rows of the part)
    slot    for each id, its row in ``values``
    values  a growable ``(capacity, row_len)`` block; capacity doubles when full

so memory is ``O(rows ever pushed)``: a row never pushed reads as zero. Finding rows is one
``searchsorted``; new rows are merged into ``ids`` (one sorted merge per push, not one per row).

The lazy optimizer runs on the gathered rows: the server gathers the weight rows a gradient
touches (and their optimizer state rows, kept in the same kind of store), calls the optimizer's
``update`` on those compact arrays, and scatters them back. That is MXNet's ``lazy_update`` for
row_sparse gradients (untouched rows, and their state, do not move), for any optimizer whose state
arrays have the weight's shape (sgd, momentum, adam, adagrad, ftrl, signum, ...).
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Tuple

import numpy as np

from ..engine.base import inline_scope

__all__ = ["RowGrad", "RowStore", "sum_rows", "LazyRowUpdater", "split_by_parts", "pack_rows", "unpack_rows"]


class RowGrad(NamedTuple):
    """Rows of a row_sparse value: ``rows[i]`` is row ``ids[i]`` (ids unique and sorted)."""

    ids: np.ndarray     # int64 (k,)
    rows: np.ndarray    # (k, row_len)


def sum_rows(ids: np.ndarray, rows: np.ndarray) -> RowGrad:
    """Sum rows with equal ids: ``RowGrad`` with unique sorted ids (the order of a row's addends
    is their order in ``ids``, so the result does not depend on how duplicates were split)."""
    ids = np.asarray(ids, np.int64)
    if ids.size == 0:
        return RowGrad(ids.copy(), rows.copy())
    order = np.argsort(ids, kind="stable")
    sids = ids[order]
    starts = np.flatnonzero(np.r_[True, sids[1:] != sids[:-1]])
    if starts.size == ids.size:           # already unique: no sums, just the order
        return RowGrad(sids, rows[order])
    return RowGrad(sids[starts], np.add.reduceat(rows[order], starts, axis=0))


class RowStore:
    """Rows of one ``(num_rows, row_len)`` array, allocated only as rows are written."""

    def __init__(self, num_rows: int, row_len: int, dtype, capacity: int = 16):
        self.num_rows, self.row_len, self.dtype = int(num_rows), int(row_len), np.dtype(dtype)
        self.ids = np.zeros(0, np.int64)
        self.slot = np.zeros(0, np.int64)
        self.values = np.zeros((capacity, self.row_len), self.dtype)
        self.used = 0

    @property
    def nbytes(self) -> int:
        """Bytes this store holds (values block plus both index arrays)."""
        return self.values.nbytes + self.ids.nbytes + self.slot.nbytes

    def __len__(self) -> int:
        return int(self.ids.size)

    def check(self, ids: np.ndarray, what: str) -> None:
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_rows):
            bad = ids[(ids < 0) | (ids >= self.num_rows)][0]
            raise ValueError(f"{what}: row id {int(bad)} is outside the part's [0, {self.num_rows})")

    def slots(self, ids: np.ndarray, create: bool) -> np.ndarray:
        """The value slot of each id (sorted unique ``ids``); -1 for absent ones unless ``create``."""
        pos = np.searchsorted(self.ids, ids)
        found = pos < self.ids.size
        found[found] = self.ids[pos[found]] == ids[found]
        out = np.full(ids.size, -1, np.int64)
        out[found] = self.slot[pos[found]]
        if create and not found.all():
            new = ids[~found]
            fresh = self._allocate(new.size)
            out[~found] = fresh
            at = np.searchsorted(self.ids, new)
            self.ids = np.insert(self.ids, at, new)
            self.slot = np.insert(self.slot, at, fresh)
        return out

    def _allocate(self, n: int) -> np.ndarray:
        need = self.used + n
        if need > self.values.shape[0]:
            cap = max(need, 2 * self.values.shape[0])
            grown = np.zeros((cap, self.row_len), self.dtype)
            grown[:self.used] = self.values[:self.used]
            self.values = grown
        fresh = np.arange(self.used, need, dtype=np.int64)
        self.used = need
        return fresh

    def gather(self, ids: np.ndarray, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Rows ``ids`` (sorted unique); rows never written are zeros."""
        s = self.slots(ids, create=False)
        if out is None:
            out = np.empty((ids.size, self.row_len), self.dtype)
        have = s >= 0
        out[have] = self.values[s[have]]
        out[~have] = 0
        return out

    def scatter(self, ids: np.ndarray, rows: np.ndarray) -> None:
        """Write rows ``ids`` (sorted unique), creating the ones not held yet."""
        slots = self.slots(ids, create=True)      # NOTE: first: it may grow ``values``
        self.values[slots] = rows

    def clear(self) -> None:
        self.ids = np.zeros(0, np.int64)
        self.slot = np.zeros(0, np.int64)
        self.used = 0

    def dense(self) -> np.ndarray:
        """The whole part as a dense array (for tests and small keys only)."""
        out = np.zeros((self.num_rows, self.row_len), self.dtype)
        out[self.ids] = self.values[self.slot]
        return out


def _leaves(state) -> List[Any]:
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [x for s in state for x in _leaves(s)]
    return [state]


def _rebuild(template, leaves: List[Any]):
    if template is None:
        return None
    if isinstance(template, (tuple, list)):
        out = [_rebuild(t, leaves) for t in template]
        return tuple(out) if isinstance(template, tuple) else out
    return leaves.pop(0)


class LazyRowUpdater:
    """Runs an optimizer (``updater.optimizer``) on the touched rows of one row_sparse key part.

    The optimizer's state for the part lives in ``RowStore``s beside the weight's, one per state
    array, filled for a new row with the value ``create_state`` gives a fresh row.
    """

    def __init__(self, optimizer, index, row_len: int, dtype, num_rows: int):
        from .. import ndarray as nd  # noqa: PLC0415 - the server makes NDArrays only once running
        self.nd = nd
        self.optimizer, self.index = optimizer, index
        with inline_scope():
            probe = nd.zeros((1, row_len), dtype=dtype)
            self.template = optimizer.create_state_multi_precision(index, probe)
            leaves = _leaves(self.template)
            self.fresh = [leaf.asnumpy()[0] for leaf in leaves]
        for leaf in leaves:
            if not isinstance(leaf, nd.NDArray) or leaf.shape != (1, row_len):
                raise ValueError(f"optimizer {type(optimizer).__name__} keeps a state that is not "
                                 "row-wise (shape of the weight), so it cannot update a row_sparse "
                                 "key lazily on the server")
        self.states = [RowStore(num_rows, row_len, leaf.dtype) for leaf in leaves]

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.states)

    def update(self, store: RowStore, grad: RowGrad) -> None:
        """``store[ids] = optimizer.update(store[ids], grad.rows, state[ids])``."""
        if grad.ids.size == 0:
            return
        nd = self.nd
        ids = grad.ids
        # NOTE: a local store calls this inside its push's engine operation, where the
        # optimizer's own NDArray operations must run inline (a queued one would wait for the
        # very worker running this); on a server thread they just run at once.
        with inline_scope():
            weight = nd.array(store.gather(ids), dtype=store.dtype)
            gnd = nd.array(grad.rows, dtype=store.dtype)
            leaves = []
            for st, fresh in zip(self.states, self.fresh):
                rows = st.gather(ids)
                rows[st.slots(ids, create=False) < 0] = fresh     # new rows start fresh
                leaves.append(nd.array(rows, dtype=st.dtype))
            state = _rebuild(self.template, list(leaves))
            self.optimizer.update_multi_precision(self.index, weight, gnd, state)
            store.scatter(ids, weight.asnumpy())
            for st, leaf in zip(self.states, leaves):
                st.scatter(ids, leaf.asnumpy())


def split_by_parts(ids: np.ndarray, bounds: List[Tuple[int, int]]) -> List[slice]:
    """For sorted ``ids`` and row ranges ``[(lo, hi), ...]`` in order, the slice of ids in each."""
    out = []
    for lo, hi in bounds:
        a, b = np.searchsorted(ids, [lo, hi])
        out.append(slice(int(a), int(b)))
    return out


def pack_rows(ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One message buffer: the int64 ids, then the rows' bytes (the row_sparse wire format)."""
    ids = np.ascontiguousarray(ids, np.int64)
    rows = np.ascontiguousarray(rows)
    buf = np.empty(ids.nbytes + rows.nbytes, np.uint8)
    buf[:ids.nbytes] = ids.view(np.uint8)
    buf[ids.nbytes:] = rows.reshape(-1).view(np.uint8)
    return buf


def unpack_rows(buf: Optional[np.ndarray], nrows: int, row_len: int, dtype) -> RowGrad:
    """The inverse of ``pack_rows`` (views into ``buf``, no copy)."""
    dtype = np.dtype(dtype)
    need = nrows * (8 + row_len * dtype.itemsize)
    got = 0 if buf is None else buf.size
    if got != need:
        raise ValueError(f"row_sparse message of {got} bytes, but {nrows} rows of {row_len} "
                         f"{dtype.name} with their ids take {need}")
    if nrows == 0:
        return RowGrad(np.zeros(0, np.int64), np.zeros((0, row_len), dtype))
    ids = buf[:nrows * 8].view(np.int64)
    rows = buf[nrows * 8:].view(dtype).reshape(nrows, row_len)
    return RowGrad(ids, rows)
