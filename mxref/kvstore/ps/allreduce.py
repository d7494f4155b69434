"""``dist_sync_allreduce``: data-parallel training with no servers; gradients summed by allreduce.

Every process is a worker. ``mx.kv.create('dist_sync_allreduce')`` joins the collective
(``mxref.collective``: the ``mpi`` engine under plain ``mpiexec -n W``, the ``robust`` one under
``python -m mxref.tools.launch -n W --engine robust``); ``MXREF_NUM_SERVERS`` is ignored.

One key on a worker::

    init     stored = value, then one engine op: broadcast rank 0's stored value to every rank
    push     reduce the devices' values on the host (the local store's reduce), then one engine
             op that copies the sum to a host buffer and allreduces it (SUM) over the workers;
             with an updater, ``updater(key, sum, stored)`` then runs here, on every worker alike
    pull     copy ``stored`` to the outputs (the local store's pull)

The store says it cannot run an optimizer (``is_capable('optimizer')`` is False), so
``Module`` and ``gluon.Trainer`` keep ``update_on_kvstore=False``: they pushpull the gradients and
apply their own updater on each worker, as with MXNet's Horovod-style stores. Every worker then
sees the identical sum and applies the identical update, so the weights stay equal everywhere.

NOTE: a collective must be called in the same order on every rank. All of this store's collective
ops write one engine variable (``_order``), so they run in push order whatever their priorities;
the program must therefore push the same keys in the same order on every worker (Module and
Trainer do). The ops still run asynchronously, overlapping the backward pass of other layers.
"""
from __future__ import annotations

import atexit
from typing import Callable, List, Optional

import numpy as np

from ... import collective
from ... import engine as _engine
from ... import ndarray as nd
from ...base import MXNetError
from ...context import cpu
from ...ndarray import NDArray
from ..base import KVStore, copy_into, push_op
from ..local import LocalKVStore

__all__ = ["AllreduceKVStore"]


def _collective_engine() -> collective.Engine:
    """The process's collective engine, started now (default engine choice) if nobody did.

    NOTE: the engine is captured once: the store's ops run on engine worker threads, where
    ``collective``'s module-level calls would see no engine of their own.
    """
    if collective._process_engine is None and getattr(collective._tls, "engine", None) is None:
        collective.init()
    return collective._engine()


def _drain() -> None:
    """At exit: finish queued allreduces first, so no peer waits for a message never sent."""
    try:
        _engine.get().wait_for_all()
    except MXNetError:
        pass    # already raised to the user, or nobody waited for it


@KVStore.register
class AllreduceKVStore(LocalKVStore):
    """``dist_sync_allreduce``: synchronous data parallelism over a collective; see the module
    docstring.

    Examples
    --------
    Under ``mpiexec -n 3``, each worker pushing ``rank + 1`` pulls ``1 + 2 + 3``:

    >>> kv = mx.kv.create('dist_sync_allreduce')
    >>> kv.init(0, mx.nd.zeros((2,)))
    >>> kv.push(0, mx.nd.full((2,), kv.rank + 1))
    >>> out = mx.nd.empty((2,)); kv.pull(0, out=out); out.asnumpy()
    array([6., 6.], dtype=float32)
    """

    registry_names = ("dist_sync_allreduce",)
    # No 'optimizer': the update runs on each worker (update_on_kvstore=False).
    capabilities = frozenset({"distributed", "synchronous", "init_broadcast"})
    _drain_registered = False

    def __init__(self, name: str = "dist_sync_allreduce"):
        super().__init__(name)
        self._coll = _collective_engine()
        # One variable that every collective op of this store writes: they run in push order.
        self._order = nd.zeros((1,), cpu(0))
        if not AllreduceKVStore._drain_registered:
            atexit.register(_drain)
            AllreduceKVStore._drain_registered = True

    # -- properties --------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self._coll.rank

    @property
    def num_workers(self) -> int:
        return self._coll.world_size

    # -- the collective as an engine op --------------------------------------------------------
    def _collective_op(self, fn: Callable[[np.ndarray], None], src: Optional[NDArray], dst: NDArray,
                       priority: int, name: str) -> None:
        """Push ``fn(flat view of dst)`` after copying ``src`` into ``dst``; ordered by ``_order``."""
        reads = (src,) if src is not None and src is not dst else ()

        def run(run_ctx):
            out = dst._data()
            if reads:
                np.copyto(out, src._data())
            fn(out.reshape(-1))
        push_op(run, dst.context, reads, (dst, self._order), priority, name)

    def _allreduce(self, flat: np.ndarray) -> None:
        self._coll.allreduce(flat, collective.SUM)

    def _broadcast(self, flat: np.ndarray) -> None:
        self._coll.broadcast(flat, 0)

    # -- init, push, pull ------------------------------------------------------------------------
    def init(self, key, value) -> None:
        """Initialise keys with rank 0's values, waiting until they arrived (errors raise here).

        After a checkpoint (``collective.version_number() > 0``) the values come from
        ``load_checkpoint`` and are equal everywhere already, so nothing is broadcast: a worker
        restarted by the robust engine can re-create its store without a collective call the
        surviving workers would not make.
        """
        super().init(key, value)
        for k, _ in self._group(key, value, "init"):
            self._store[k].wait_to_read()

    def _init_impl(self, key, value: NDArray) -> None:
        super()._init_impl(key, value)
        if self._coll.world_size > 1 and self._coll.version_number() == 0:
            self._collective_op(self._broadcast, None, self._store[key], 0, "KVStoreAllreduceInit")

    def _push_impl(self, key, values: List[NDArray], priority: int) -> None:
        stored = self._store[key]
        target = stored if self._updater is None else self._merge_buffer(key)
        merged = self._reduce(key, values, priority, target)
        if self._coll.world_size > 1:
            self._collective_op(self._allreduce, merged, target, priority, "KVStoreAllreduce")
            merged = target
        if self._updater is not None:
            self._updater(key, merged, stored)
        elif merged is not stored:
            copy_into(merged, stored, priority, "KVStoreAssign")

    # -- barrier, compression, commands --------------------------------------------------------
    def _barrier(self) -> None:
        """Block until every worker has reached the barrier (an allreduce of one number)."""
        token = nd.zeros((1,), cpu(0))
        self._collective_op(self._allreduce, None, token, 0, "KVStoreAllreduceBarrier")
        token.wait_to_read()

    barrier = _barrier

    def set_gradient_compression(self, compression_params: dict) -> None:
        raise MXNetError(f"kvstore {self.type}: gradient compression is not supported (the sum is "
                         "an exact allreduce); use dist_sync for 2-bit compression")

    def _send_command_to_servers(self, head: int, body) -> None:
        raise MXNetError(f"kvstore {self.type}: there are no servers to send command {head} to")
