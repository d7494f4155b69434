"""The worker side of the parameter server: the ``dist_sync``, ``dist_async`` and ``dist_ssp`` stores.

``mx.kv.create('dist_sync')`` on every rank of ``mpiexec -n W+S python train.py``: on a server
rank it serves (``server.py``) and then exits the process; on a worker rank it returns a store
whose push and pull are engine operations that talk to the servers.

One key on a worker (MXNet's ``KVStoreDist``)::

    comm_buf   a host NDArray per key; its engine variable orders every message of the key
    push       reduce the devices' values into comm_buf (the local store's reduce), then one
               engine op that reads the sum and *writes* comm_buf: it sends each part (2-bit
               compressed if asked) to its server and completes when every server acknowledged
    pull       one engine op writing comm_buf: each server's reply is received straight into
               comm_buf's part, then comm_buf is copied to the outputs

Because both ops write comm_buf, a pull waits for the acknowledgement of the push before it, and
a push for the pull before it: that one engine dependency is the whole worker-side consistency
logic. The acknowledgement itself carries the model (``consistency/``, applied by the servers):
after the whole round in ``dist_sync``, at once in ``dist_async``, within ``tau`` clocks of the
slowest in ``dist_ssp``. A store's type name picks the model from the registry, so a newly
registered model needs no store class of its own.

``init``: worker 0 sends the values; then all workers meet at a barrier. ``set_optimizer``:
worker 0 pickles the updater to every server, then a barrier. At exit each worker waits for its
engine, sends ``DONE`` to every server and stops its communication thread; a worker dying from
an uncaught exception aborts the whole MPI job instead, so nobody waits for it. (In an in-process
job, ``inprocess.py``, each worker thread does the same when its function returns or raises.)
"""
from __future__ import annotations

import pickle
from typing import Callable, List, Optional

import numpy as np

from ... import engine as _engine
from ... import ndarray as nd
from ... import optimizer as _opt
from ...base import MXNetError
from ...context import cpu
from ...engine.base import FnProperty
from ...ndarray import NDArray
from ..base import KVStore, copy_into
from ..base import create as _base_create
from ..local import LocalKVStore
from ..sparse import is_row_sparse
from .comm import Cmd, Countdown, kv_timeout
from .consistency import get_consistency, model_for_store
from .consistency.ssp import DEFAULT_STALENESS
from .placement import Placement
from .runtime import runtime
from .sparse_worker import DistRowSparseKey, pull_rows, send_rows

__all__ = ["DistKVStore", "DistAsyncKVStore", "DistSSPKVStore", "create", "DEFAULT_STALENESS"]


@KVStore.register
class DistKVStore(LocalKVStore):
    """``dist_sync`` (also ``dist``, ``dist_sync_device``, ``dist_device_sync``): synchronous SGD
    over parameter servers; see the module docstring.

    On CPU contexts ``dist_sync_device`` is ``dist_sync``: the local reduce is the local store's.
    """

    registry_names = ("dist_sync", "dist", "dist_sync_device", "dist_device_sync")
    default_model = "dist_sync"         # the consistency model when the name names none

    def __init__(self, name: str = "dist_sync"):
        model = model_for_store(name) or get_consistency(self.default_model)
        options = model.options(name)       # a bad option fails on every rank alike
        super().__init__(name)
        rt = runtime()
        if rt.roles.is_server:
            rt.serve()                      # under mpiexec: never returns
        self._rt = rt
        self._comm = rt.start_worker()
        self._sid = rt.next_store_id
        rt.next_store_id += 1
        rt.adopt(self)
        self._model: type = model
        self._options = options
        self._placement = Placement(rt.roles.num_servers)
        self._residual: dict = {}
        self._has_updater = False

    @property
    def consistency(self) -> type:
        """The consistency model class (``consistency/``) the servers apply to this store's keys."""
        return self._model

    @property
    def capabilities(self) -> frozenset:
        return frozenset({"optimizer", "distributed"}) | self._model.capabilities

    # -- properties ------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self._rt.roles.rank

    @property
    def num_workers(self) -> int:
        return self._rt.roles.num_workers

    @property
    def placement(self) -> dict:
        """``{key: [Part(server, lo, hi), ...]}``: where each key's elements live."""
        return self._placement.table()

    @property
    def server_loads(self) -> List[int]:
        """Bytes of values held by each server."""
        return self._placement.loads

    # -- init, push, pull ------------------------------------------------------------------------
    def init(self, key, value) -> None:
        """Initialise keys (worker 0's values count), then wait until every worker has them."""
        groups = self._group(key, value, "init", init=True)
        # row_sparse keys are cut by row range instead (``sparse_worker.py``).
        self._placement.assign([(k, a[0].size, a[0]._dtype.itemsize) for k, a in groups
                                if k not in self._meta and len(a) == 1 and not is_row_sparse(a[0])])
        super().init(key, value)
        for k, _ in groups:
            (self._rsp[k] if k in self._rsp else self._store[k]).wait_to_read()
        self._barrier()

    def _init_impl(self, key, value: NDArray) -> None:
        buf = self._store[key] = nd.empty(value.shape, cpu(0), value._dtype)
        copy_into(value, buf, 0, "KVStoreDistInit")
        if self.rank == 0:
            meta = {"shape": None, "dtype": value._dtype.str, "mode": self._model.name,
                    "options": self._options}
            self._send(key, Cmd.INIT, buf, buf, 0, meta)

    def _push_impl(self, key, values: List[NDArray], priority: int) -> None:
        if self._model.needs_updater and not self._has_updater:
            raise MXNetError(f"kvstore {self.type}: pushing key {key!r} needs an optimizer on the "
                             "servers (Updater needs to be set for async mode): call "
                             "kv.set_optimizer(...) on every worker before the first push")
        buf = self._store[key]
        merged = self._reduce(key, values, priority, buf)
        self._send(key, Cmd.PUSH, merged, buf, priority, {})

    def _pull_impl(self, key, outs: List[NDArray], priority: int) -> None:
        buf = self._store[key]
        self._send(key, Cmd.PULL, None, buf, priority, {})
        super()._pull_impl(key, outs, priority)

    # -- row_sparse keys: only touched rows travel (``sparse_worker.py``) ------------------------
    def _rsp_init(self, key, value: NDArray) -> None:
        entry = self._rsp[key] = DistRowSparseKey.make(value.shape, value._dtype,
                                                       self._rt.roles.num_servers)
        if self.rank == 0:
            send_rows(self, key, entry, Cmd.INIT, [value], 0,
                      {"dtype": value._dtype.str, "mode": self._model.name, "options": self._options})

    def _rsp_push(self, key, values: List[NDArray], priority: int) -> None:
        if self._model.needs_updater and not self._has_updater:
            raise MXNetError(f"kvstore {self.type}: pushing key {key!r} needs an optimizer on the "
                             "servers (Updater needs to be set for async mode): call "
                             "kv.set_optimizer(...) on every worker before the first push")
        send_rows(self, key, self._rsp[key], Cmd.PUSH, values, priority, {})

    def _rsp_pull(self, key, out: NDArray, row_ids, priority: int) -> None:
        pull_rows(self, key, self._rsp[key], out, row_ids, priority)

    def _send(self, key, cmd: Cmd, src: Optional[NDArray], buf: NDArray, priority: int,
              meta: dict) -> None:
        """Push the engine op that sends ``src`` (or pulls into ``buf``) part by part."""
        parts = self._placement.parts(key)
        gc = self._compression if cmd == Cmd.PUSH and buf._dtype == np.float32 else None
        # A sync push's acknowledgement may wait for the slowest worker; the server's own round
        # timeout then names who is missing, so the worker's deadline is left longer.
        timeout = kv_timeout() * (2 if cmd == Cmd.PUSH else 1)
        comm, sid, shape = self._comm, self._sid, buf.shape

        def start(done):
            flat = (src if src is not None else buf)._data().reshape(-1)
            count = Countdown(len(parts), done)
            for i, p in enumerate(parts):
                part = flat[p.lo:p.hi]
                m = dict(meta)
                what = f"{cmd.name.lower()} of key {key!r}" + (f" (part {i})" if len(parts) > 1 else "")
                if "shape" in m:
                    m["shape"] = shape if len(parts) == 1 else (p.hi - p.lo,)
                if cmd == Cmd.PULL:
                    comm.request(p.server, cmd, (sid, key, i), m, recv_into=part, callback=count,
                                 timeout=timeout, what=what)
                    continue
                if gc is not None:
                    residual = self._residual.get((key, i))
                    if residual is None:
                        residual = self._residual[(key, i)] = np.zeros(part.size, np.float32)
                    part = gc.quantize(part, residual)
                    m["compressed"] = True
                comm.request(p.server, cmd, (sid, key, i), m, data=part, callback=count,
                             timeout=timeout, what=what)
        # The op reads what it sends (src, which may be buf). A pull reads buf too: it must come
        # after this worker's push and, if that push failed, fail with it instead of overwriting
        # buf (an op that writes a variable without reading it clears its error, engine.md).
        reads = [src if src is not None else buf]
        _push_comm_op(start, reads, buf, priority, f"KVStoreDist{cmd.name.title()}")

    # -- updaters, compression, barriers ---------------------------------------------------------
    def _set_updater(self, updater: Callable) -> None:
        """Send ``updater`` (pickled; an optimizer's ``Updater`` from ``set_optimizer``) to the
        servers, which call it on every merged push. Worker 0 sends it; all workers then meet."""
        if not callable(updater):
            raise MXNetError(f"kvstore: the updater must be callable, got {type(updater).__name__}")
        try:
            body = pickle.dumps(updater)
        except Exception as exc:  # noqa: BLE001 - lambdas, closures, open files ...
            raise MXNetError(f"kvstore {self.type}: the updater runs on the servers and must be "
                             f"picklable (a module-level function or an optimizer): {exc}") from None
        if self.rank == 0:
            self._comm.call(self._rt.servers(), Cmd.SET_UPDATER, self._sid,
                            data=np.frombuffer(body, np.uint8))
        self._has_updater = True
        self._barrier()

    set_updater = _set_updater

    def set_optimizer(self, optimizer) -> None:
        """Run ``optimizer`` on the servers (pickled there from worker 0), keeping per-key state."""
        self._set_updater(_opt.get_updater(optimizer))

    def set_gradient_compression(self, compression_params: dict) -> None:
        """2-bit compress every push (float32 keys) with residual feedback on this worker."""
        super().set_gradient_compression(compression_params)
        if self.rank == 0:
            gc = self._compression
            self._comm.call(self._rt.servers(), Cmd.SET_COMPRESSION, self._sid,
                            meta={"type": gc.type, "threshold": gc.threshold})
        self._barrier()

    def _barrier(self) -> None:
        """Block until every active worker has reached a barrier (finished workers do not count)."""
        self._comm.call([self._rt.servers()[0]], Cmd.BARRIER, timeout=2 * kv_timeout())

    barrier = _barrier

    def _send_command_to_servers(self, head: int, body) -> None:
        """MXNet's command channel; head 0 (``kController``) carries a pickled optimizer."""
        if head != 0:
            raise MXNetError(f"kvstore {self.type}: unknown server command {head}; only 0 "
                             "(a pickled optimizer, as MXNet's set_optimizer sends) is supported")
        self.set_optimizer(pickle.loads(body.encode("latin-1") if isinstance(body, str) else body))

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise MXNetError(f"kvstore {self.type}: optimizer states live on the servers and cannot be "
                         "saved from a worker (as in MXNet); save the weights instead")

    def load_optimizer_states(self, fname: str) -> None:
        raise MXNetError(f"kvstore {self.type}: optimizer states live on the servers and cannot be "
                         "loaded from a worker (as in MXNet)")


@KVStore.register
class DistAsyncKVStore(DistKVStore):
    """``dist_async``: each push is applied by the servers' optimizer on arrival."""

    registry_names = ("dist_async", "dist_async_device", "dist_device_async")
    default_model = "dist_async"


@KVStore.register
class DistSSPKVStore(DistKVStore):
    """``dist_ssp`` / ``dist_ssp:tau``: bounded delay; no worker runs more than ``tau`` pushes of
    a key ahead of the slowest (``tau`` from the name, else ``MXREF_KV_STALENESS``, default 2)."""

    registry_names = ("dist_ssp",)
    default_model = "dist_ssp"


def _push_comm_op(start: Callable, reads: List[NDArray], buf: NDArray, priority: int,
                  name: str) -> None:
    """Push an engine op that calls ``start(done)`` and completes when ``done(error)`` is called
    (from the communication thread when the last reply arrives): the engine's ``push_external``."""
    _engine.get().push_external(start, cpu(0), [a._chunk.var for a in reads], [buf._chunk.var],
                                FnProperty.CPU_PRIORITIZED, priority, name)


def create(name: str = "dist_sync") -> KVStore:
    """``mx.kv.create`` for the dist types: any registered consistency model's name (with its
    options, ``'dist_ssp:3'``) makes a parameter-server store; other names go to the registry."""
    lname = name.lower()
    if model_for_store(lname) is not None:
        klass = KVStore.kv_registry.get(lname.partition(":")[0])
        if not (isinstance(klass, type) and issubclass(klass, DistKVStore)):
            klass = DistKVStore         # a model registered without a store class of its own
        return klass(lname)
    return _base_create(name)
