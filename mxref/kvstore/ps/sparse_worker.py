"""The worker side of row_sparse keys on the parameter server: only touched rows travel.

A row_sparse key of shape ``(N, ...)`` is cut by *row range* over the ``S`` servers: server ``s``
holds rows ``[round(N*s/S), round(N*(s+1)/S))`` in a lazy row store (``row_store.py``), so a
row's server is found from its id alone and a 10^9-row key costs nothing until rows arrive.

The messages (one header, then one raw buffer; ``comm.py``)::

    INIT  meta {rsp, shape: (rows of part, row_len), nrows: k}   data  ids[k] int64 | rows[k, row_len]
    PUSH  meta {rsp, nrows: k}                                    data  ids[k] int64 | rows[k, row_len]
    PULL  meta {rsp}                                              data  ids[k] int64
          reply                                                   data  rows[k, row_len]
    PULL  meta {rsp, all}   (a plain pull of the whole value)     reply ids | rows of every held row

Ids are local to the part (``id - lo``). A push goes to every server of the key, with ``k = 0``
(a header only) where the gradient touches none of its rows: ``dist_sync`` closes a round when
every worker has pushed, so each server must hear from each worker. A ``row_sparse_pull`` asks
only the servers that hold some requested row, and each reply is received straight into its
slice of the rows buffer. ``sum_rows`` first sums the devices' rows (and duplicate ids), so at
most one copy of each touched row leaves the worker.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional

import numpy as np

from ... import engine as _engine
from ... import ndarray as nd
from ...context import cpu
from ...engine.base import FnProperty
from ...ndarray import NDArray
from ..row_store import pack_rows, split_by_parts, unpack_rows
from ..sparse import row_len, summed_rows, unique_ids, write_dense, write_rows
from .comm import Cmd, Countdown, kv_timeout
from .placement import Part

__all__ = ["DistRowSparseKey", "row_parts"]


def row_parts(num_rows: int, num_servers: int) -> List[Part]:
    """Rows ``[lo, hi)`` of each server (empty ranges dropped when rows are fewer than servers)."""
    bounds = [round(num_rows * i / num_servers) for i in range(num_servers + 1)]
    return [Part(i, bounds[i], bounds[i + 1]) for i in range(num_servers) if bounds[i + 1] > bounds[i]]


class DistRowSparseKey(NamedTuple):
    """A row_sparse key of one dist store, as its workers see it."""

    parts: List[Part]
    shape: tuple
    row_len: int
    dtype: np.dtype
    order: NDArray          # every message of the key writes it: the engine keeps them in order

    def wait_to_read(self) -> None:
        self.order.wait_to_read()

    @classmethod
    def make(cls, shape, dtype, num_servers: int) -> "DistRowSparseKey":
        return cls(row_parts(shape[0], num_servers), tuple(shape), row_len(shape), np.dtype(dtype),
                   nd.zeros((1,), cpu(0)))

    @property
    def bounds(self):
        return [(p.lo, p.hi) for p in self.parts]


def _push_op(start, reads: List[NDArray], writes: List[NDArray], priority: int, name: str) -> None:
    _engine.get().push_external(start, cpu(0), [a._chunk.var for a in reads],
                                [a._chunk.var for a in writes], FnProperty.CPU_PRIORITIZED,
                                priority, name)


def send_rows(store, key, entry: DistRowSparseKey, cmd: Cmd, values: List[NDArray],
              priority: int, meta: dict) -> None:
    """INIT or PUSH ``values`` (summed by row) to every server of ``key``, as one engine op."""
    comm, sid = store._comm, store._sid
    timeout = kv_timeout() * (2 if cmd == Cmd.PUSH else 1)

    def start(done):
        grad = summed_rows(values)
        count = Countdown(len(entry.parts), done)
        for i, (p, sl) in enumerate(zip(entry.parts, split_by_parts(grad.ids, entry.bounds))):
            ids, rows = grad.ids[sl] - p.lo, grad.rows[sl]
            m = dict(meta, rsp=True, nrows=int(ids.size))
            if cmd == Cmd.INIT:
                m["shape"] = (p.hi - p.lo, entry.row_len)
            comm.request(p.server, cmd, (sid, key, i), m, data=pack_rows(ids, rows) if ids.size else None,
                         callback=count, timeout=timeout,
                         what=f"{cmd.name.lower()} of row_sparse key {key!r} (rows {p.lo}..{p.hi - 1})")
    _push_op(start, [*values, entry.order], [entry.order], priority,
             f"KVStoreDist{cmd.name.title()}RowSparse")


def pull_rows(store, key, entry: DistRowSparseKey, out: NDArray, row_ids: Optional[NDArray],
              priority: int) -> None:
    """Fill ``out`` with rows ``row_ids`` (all held rows when None) of ``key``, as one engine op."""
    comm, sid = store._comm, store._sid
    dense = getattr(out, "stype", "default") != "row_sparse"

    def start(done):
        if row_ids is not None:
            ids = unique_ids(row_ids, entry.shape[0], key)
            rows = np.empty((ids.size, entry.row_len), entry.dtype)
            slices = split_by_parts(ids, entry.bounds)
            asks = [(i, p, sl) for i, (p, sl) in enumerate(zip(entry.parts, slices)) if sl.stop > sl.start]

            def finish():
                (write_dense if dense else write_rows)(out, ids, rows)
            count = Countdown(len(asks), done, finish)
            for i, p, sl in asks:
                comm.request(p.server, Cmd.PULL, (sid, key, i), {"rsp": True},
                             data=np.ascontiguousarray(ids[sl] - p.lo), recv_into=rows[sl],
                             callback=count, what=f"row_sparse_pull of key {key!r}")
            return
        got: dict = {}

        def keep(i, p):
            def cb(msg, err):
                if msg is not None:
                    nbytes = 0 if msg.data is None else msg.data.size
                    n = nbytes // (8 + entry.row_len * entry.dtype.itemsize)
                    g = unpack_rows(msg.data, n, entry.row_len, entry.dtype)
                    got[i] = (g.ids + p.lo, g.rows)
                count(msg, err)
            return cb

        def finish_all():
            parts = [got[i] for i in sorted(got)]
            ids = np.concatenate([g[0] for g in parts]) if parts else np.zeros(0, np.int64)
            rows = (np.concatenate([g[1] for g in parts]) if parts
                    else np.zeros((0, entry.row_len), entry.dtype))
            (write_dense if dense else write_rows)(out, ids, rows)
        count = Countdown(len(entry.parts), done, finish_all)
        for i, p in enumerate(entry.parts):
            comm.request(p.server, Cmd.PULL, (sid, key, i), {"rsp": True, "all": True},
                         callback=keep(i, p), what=f"pull of row_sparse key {key!r}")
    reads = [entry.order] if row_ids is None else [entry.order, row_ids]
    _push_op(start, reads, [entry.order, out], priority, "KVStoreDistPullRowSparse")
