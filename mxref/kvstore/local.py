"""The ``local`` store: values merged on the CPU, summed by several threads, updated there.

One push of key ``k`` with values ``v_1..v_n`` on any devices (MXNet's ``KVStoreLocal`` with
``CommCPU``)::

    reduce   one engine op reading v_1..v_n, writing the merge buffer:  buf = v_1 + ... + v_n
             (values on a GPU are first copied to host staging buffers; a single host value on
             the store's context is used as is, with no copy)
    update   with an updater:  updater(k, buf, stored)   -- pushes the optimizer's ops
             without one:      the reduce writes ``stored`` directly (the sum replaces it)
    pull     one engine op per output reading ``stored``, writing the output

The sum adds the values left to right in the stored dtype. Arrays of at least
``MXNET_KVSTORE_BIGARRAY_BOUND`` elements (default 1e6) are cut into contiguous ranges summed by
``MXNET_KVSTORE_REDUCTION_NTHREADS`` threads (default 4); numpy releases the GIL inside ``add``,
so the threads run in parallel, and the result is bit-identical to the one-thread sum.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import ndarray as nd
from .. import optimizer as _opt
from ..base import env_int
from ..context import Context, cpu
from ..ndarray import NDArray
from .base import KVStore, copy_into, is_host, push_op
from .sparse import RowSparseKey, read_rows, summed_rows, unique_ids, write_dense, write_rows

__all__ = ["LocalKVStore", "reduce_sum", "reduction_pool"]

_ALIGN = 4096          # ranges start on multiples of this many elements (whole cache lines)
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def reduction_pool() -> Tuple[ThreadPoolExecutor, int]:
    """The shared reduce threads and their count (``MXNET_KVSTORE_REDUCTION_NTHREADS``)."""
    global _pool
    n = max(1, env_int("MXNET_KVSTORE_REDUCTION_NTHREADS", 4))
    with _pool_lock:
        if _pool is None or _pool._max_workers != n:
            if _pool is not None:
                _pool.shutdown(wait=False)    # the flag changed: its idle threads just exit
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="kvstore reduce")
        return _pool, n


def _sum_range(out: np.ndarray, sources: List[np.ndarray], lo: int, hi: int) -> None:
    o = out[lo:hi]
    if not np.may_share_memory(o, sources[0][lo:hi]):
        np.copyto(o, sources[0][lo:hi])
    for s in sources[1:]:
        np.add(o, s[lo:hi], out=o)


def reduce_sum(out: np.ndarray, sources: List[np.ndarray], bound: Optional[int] = None,
               nthreads: Optional[int] = None) -> None:
    """``out[...] = sources[0] + sources[1] + ...``, split over threads for big arrays.

    Parameters
    ----------
    out : numpy.ndarray
        Contiguous destination; it may be ``sources[0]`` itself (an in-place sum).
    sources : list of numpy.ndarray
        Same size and dtype as ``out``.
    bound : int, optional
        Element count from which threads are used (``MXNET_KVSTORE_BIGARRAY_BOUND``, 1e6).
    nthreads : int, optional
        How many ranges to cut (``MXNET_KVSTORE_REDUCTION_NTHREADS``, 4).
    """
    flat = out.reshape(-1)
    srcs = [s.reshape(-1) for s in sources]
    n = flat.size
    if bound is None:
        bound = env_int("MXNET_KVSTORE_BIGARRAY_BOUND", 1000 * 1000)
    pool, default_threads = reduction_pool()
    nthreads = default_threads if nthreads is None else max(1, nthreads)
    if n < bound or nthreads == 1:
        _sum_range(flat, srcs, 0, n)
        return
    step = -(-n // nthreads)
    step = -(-step // _ALIGN) * _ALIGN
    futures = [pool.submit(_sum_range, flat, srcs, lo, min(lo + step, n)) for lo in range(0, n, step)]
    for f in futures:
        f.result()


def _plain_host_copy(src: NDArray, dst: NDArray) -> bool:
    """Whether ``copy_into(src, dst)`` would be a numpy assignment between two host arrays."""
    if src is dst or src._chunk is dst._chunk:
        return False
    return (getattr(src, "stype", "default") == "default" and getattr(dst, "stype", "default") == "default"
            and is_host(src.context) and is_host(dst.context))


@KVStore.register
class LocalKVStore(KVStore):
    """``local``: the stored values and merge buffers live on ``cpu(0)``; sums run on the host.

    See the module docstring for the path of one push. ``mx.kv.create('local')`` makes one.
    """

    registry_names = ("local",)

    def __init__(self, name: str = "local"):
        super().__init__(name)
        self._store: Dict = {}       # key -> NDArray holding the current value
        self._merge: Dict = {}       # key -> merge buffer (only with an updater or compression)
        self._staging: Dict = {}     # (key, source index) -> host copy of a device value

    # -- where things live (``device`` overrides) ---------------------------------------------
    def _home(self, key, value: NDArray) -> Context:
        """The context of ``key``'s stored value and merge buffer."""
        return cpu(0)

    def _sum(self, target: NDArray, sources: List[NDArray], priority: int) -> None:
        """Push the reduce: ``target = sum(sources)``, all on ``target``'s context."""
        def reduce(run_ctx):
            reduce_sum(target._data(), [s._data() for s in sources])
        push_op(reduce, target.context, sources, (target,), priority, "KVStoreReduce")

    # -- the three operations --------------------------------------------------------------------
    def _init_impl(self, key, value: NDArray) -> None:
        stored = nd.empty(value.shape, self._home(key, value), value._dtype)
        copy_into(value, stored, 0, "KVStoreInit")
        self._store[key] = stored

    def _push_impl(self, key, values: List[NDArray], priority: int) -> None:
        stored = self._store[key]
        merged = self._reduce(key, values, priority, None if self._updater is not None else stored)
        if self._updater is not None:
            self._updater(key, merged, stored)
        elif merged is not stored:
            copy_into(merged, stored, priority, "KVStoreAssign")

    def groups_keys(self) -> bool:
        """Whether a push or pull of several keys runs as one group (below): only where the
        store keeps ``local``'s own per-key push and pull. A distributed store built on this
        class sends each key to its servers or collective instead, so it keeps the per-key path."""
        cls = type(self)
        return cls._push_impl is LocalKVStore._push_impl and cls._pull_impl is LocalKVStore._pull_impl

    def _push_dense(self, groups, priority: int) -> None:
        """The keys of one push call; with an optimizer's ``Updater`` all of them are handed over
        in one call, so it can group them into fused multi-tensor updates (``multi_sgd_*``: one
        engine operation per ``MXNET_OPTIMIZER_AGGREGATION_SIZE`` weights instead of one per key).

        NOTE: a user's own updater (``_set_updater``) is still called once per key with one
        ``(key, merged, stored)``, as in MXNet; only the optimizer's ``Updater`` takes lists. The
        result is the same bits (tests/optimizer/test_optimizer_aggregation.py).
        """
        if len(groups) < 2 or not isinstance(self._updater, _opt.Updater) or not self.groups_keys():
            super()._push_dense(groups, priority)
            return
        by_ctx: Dict = {}      # the updater keeps its update counts per device: one call per device
        for k, arrays in groups:
            stored = self._store[k]
            keys, merged, weights = by_ctx.setdefault(stored.context, ([], [], []))
            keys.append(k)
            merged.append(self._reduce(k, arrays, priority, None))
            weights.append(stored)
        for keys, merged, weights in by_ctx.values():
            self._updater(keys, merged, weights)

    def _pull_dense(self, groups, priority: int) -> None:
        """Several keys pulled in one call: their host-to-host copies are one ``KVStorePull``
        operation per output context instead of one per output (one engine push for a whole
        model's weights, as ``Module`` pulls them every batch). One key keeps its own ops."""
        if len(groups) < 2 or not self.groups_keys():
            super()._pull_dense(groups, priority)
            return
        batches: Dict = {}     # output context -> (sources, outputs)
        for k, outs in groups:
            stored = self._store[k]
            for o in outs:
                if _plain_host_copy(stored, o):
                    src, dst = batches.setdefault(o.context, ([], []))
                    src.append(stored)
                    dst.append(o)
                else:
                    copy_into(stored, o, priority, "KVStorePull")
        for ctx, (src, dst) in batches.items():
            def copy(run_ctx, src=src, dst=dst):
                for s, d in zip(src, dst):
                    d._data()[...] = s._data()
            push_op(copy, ctx, src, dst, priority, "KVStorePull")

    def _pull_impl(self, key, outs: List[NDArray], priority: int) -> None:
        stored = self._store[key]
        for o in outs:
            copy_into(stored, o, priority, "KVStorePull")

    # -- row_sparse keys (``sparse.py``): a lazy row table on the host ------------------------------
    def _rsp_init(self, key, value: NDArray) -> None:
        entry = self._rsp[key] = RowSparseKey(key, value.shape, value._dtype)

        def init(run_ctx):
            g = read_rows(value)
            entry.store.check(g.ids, f"kvstore.init of key {key!r}")
            entry.store.scatter(g.ids, g.rows)
        push_op(init, cpu(0), (value,), (entry.order,), 0, "KVStoreInitRowSparse")

    def _rsp_push(self, key, values: List[NDArray], priority: int) -> None:
        entry, updater = self._rsp[key], self._updater

        def push(run_ctx):
            grad = summed_rows(values)
            entry.store.check(grad.ids, f"kvstore.push of key {key!r}")
            entry.apply(grad, updater)
        push_op(push, cpu(0), values, (entry.order,), priority, "KVStorePushRowSparse")

    def _rsp_pull(self, key, out: NDArray, row_ids: Optional[NDArray], priority: int) -> None:
        entry = self._rsp[key]
        reads = (entry.order,) if row_ids is None else (entry.order, row_ids)

        def pull(run_ctx):
            st = entry.store
            ids = st.ids.copy() if row_ids is None else unique_ids(row_ids, st.num_rows, key)
            rows = st.gather(ids)
            if getattr(out, "stype", "default") == "row_sparse":
                write_rows(out, ids, rows)
            else:
                write_dense(out, ids, rows)
        push_op(pull, out.context, reads, (out,), priority, "KVStorePullRowSparse")

    # -- reduce --------------------------------------------------------------------------------
    def _reduce(self, key, values: List[NDArray], priority: int, into: Optional[NDArray]) -> NDArray:
        """Sum ``values`` on the store's context; return the array holding the sum.

        ``into`` is where the sum should go when the caller does not need a separate buffer;
        a single value already on the right context is returned itself (MXNet avoids the copy).
        """
        ctx = self._store[key].context
        if len(values) == 1 and values[0].context == ctx:
            return values[0]
        target = into if into is not None else self._merge_buffer(key)
        self._sum(target, self._gather(key, values, ctx, priority), priority)
        return target

    def _merge_buffer(self, key) -> NDArray:
        buf = self._merge.get(key)
        stored = self._store[key]
        if buf is None or buf.context != stored.context:
            buf = self._merge[key] = nd.empty(stored.shape, stored.context, stored._dtype)
        return buf

    def _gather(self, key, values: List[NDArray], ctx: Context, priority: int) -> List[NDArray]:
        """The values as arrays the reduce on ``ctx`` can read: host memory is read in place,
        anything else is first copied into a staging buffer on ``ctx``."""
        out = []
        for i, v in enumerate(values):
            if v.context == ctx or (is_host(v.context) and is_host(ctx)):
                out.append(v)
                continue
            buf = self._staging.get((key, i))
            if buf is None or buf.context != ctx:
                buf = self._staging[(key, i)] = nd.empty(v.shape, ctx, v._dtype)
            copy_into(v, buf, priority, "KVStoreCopyToMerge")
            out.append(buf)
        return out
