"""The parameter server: holds key parts, merges pushes, applies updates, answers pulls.

A server process runs ``Server(...).run()`` from inside ``mx.kv.create('dist_*')`` and never
returns to user code (MXNet's ``KVStoreDistServer``). Three kinds of threads:

* the communication thread (``comm.py``) receives every request and hands it on;
* ``MXREF_KV_SERVER_THREADS`` update threads (default 4), each owning the key parts whose hash
  falls on it, so one key's messages are handled in arrival order while different keys merge
  and update in parallel (MXNet runs every update on one thread: complaint 4);
* a control thread for barriers, ``DONE`` notices, updaters and compression settings.

Consistency, per key part, is a strategy object (``consistency/``: ``dist_sync``, ``dist_async``,
``dist_ssp``, or any registered model) named in the key's INIT from worker 0: the server stores,
merges and applies; the model decides when a push is applied and when it is acknowledged.

A worker that finishes sends ``DONE``; from then on rounds, barriers and clocks count only the
workers still active, which is how workers with unequal numbers of batches all finish. A round
or a barrier open longer than ``MXREF_KV_TIMEOUT`` fails with an error naming the workers that
never came. The server exits when every worker is done.
"""
from __future__ import annotations

import os
import pickle
import queue
import threading
import time
import zlib
from typing import Dict, List, Optional

import numpy as np

from ...base import env_int
from ..compression import GradientCompression
from ..row_store import LazyRowUpdater, RowGrad, RowStore, pack_rows, sum_rows, unpack_rows
from .comm import Cmd, Comm, Message, kv_timeout
from .consistency import Consistency, PartContext, get_consistency
from .roles import Roles

__all__ = ["Server", "server_threads"]


def server_threads() -> int:
    """``MXREF_KV_SERVER_THREADS``: update threads per server (default ``min(4, cpu count)``)."""
    return max(1, env_int("MXREF_KV_SERVER_THREADS", min(4, os.cpu_count() or 1)))


class _ServerPart(PartContext):
    """What every key part answers the same way: replies, errors and names go through its server."""

    server: "Server"
    key: tuple                             # (store id, user key, part index)

    def reply(self, src: int, rid: int) -> None:
        self.server._reply(src, rid)

    def error(self, src: int, rid: int, text: str) -> None:
        self.server._error(src, rid, self.key, text)

    def names(self, ranks) -> str:
        return self.server._names(ranks)


class _KeyPart(_ServerPart):
    """One key part on this server: its value, and the consistency model deciding about its pushes."""

    def __init__(self, server: "Server", key, shape, dtype, mode: str, options: dict, workers):
        from ... import ndarray as nd  # noqa: PLC0415 - the server builds NDArrays only once running
        self.server = server
        self.key = key                   # (store id, user key, part index)
        self.stored = nd.empty(shape, dtype=dtype)     # the value, an NDArray for updaters
        self.merged_nd = nd.empty(shape, dtype=dtype)  # the round's sum / the arriving gradient
        self.nbytes = self.stored.size * self.stored._dtype.itemsize
        self.model: Consistency = get_consistency(mode)(self, workers, **options)

    # -- what the model may ask (PartContext) -----------------------------------------------------
    @property
    def merged(self) -> np.ndarray:
        return self.merged_nd._data()

    def merge(self, grad: np.ndarray, first: bool) -> None:
        if first:
            np.copyto(self.merged, grad)
        else:
            np.add(self.merged, grad, out=self.merged)

    def gradient(self, msg: Message) -> np.ndarray:
        return self.server._as_array(self, msg, msg.meta.get("compressed", False))

    def apply(self, grad: np.ndarray, replace: bool) -> None:
        self.server._apply(self, grad, replace)


class _SparseKeyPart(_ServerPart):
    """A row_sparse key part: a lazy ``RowStore`` of rows ``[0, rows)`` of the part; pushes carry
    ``(ids, rows)`` and pulls name the ids they want (``row_store.py``, the sparse wire format)."""

    def __init__(self, server: "Server", key, shape, dtype, mode: str, options: dict, workers):
        self.server, self.key = server, key
        self.store = RowStore(shape[0], shape[1], dtype)
        self._round: list = []             # the open round's pushed RowGrads
        self._lazy: Optional[LazyRowUpdater] = None
        self.model: Consistency = get_consistency(mode)(self, workers, **options)

    @property
    def nbytes(self) -> int:
        """Bytes held for this part: the rows ever pushed and their optimizer state."""
        return self.store.nbytes + (self._lazy.nbytes if self._lazy is not None else 0)

    @property
    def merged(self) -> RowGrad:
        if len(self._round) == 1:
            return self._round[0]
        return sum_rows(np.concatenate([g.ids for g in self._round]),
                        np.concatenate([g.rows for g in self._round]))

    def merge(self, grad: RowGrad, first: bool) -> None:
        if first:
            self._round = []
        # NOTE: the message buffer is this push's own, so keeping a view of it is safe.
        self._round.append(grad)

    def gradient(self, msg: Message) -> RowGrad:
        if msg.meta.get("compressed"):
            raise ValueError("gradient compression does not apply to row_sparse keys")
        st = self.store
        grad = unpack_rows(msg.data, int(msg.meta.get("nrows", 0)), st.row_len, st.dtype)
        st.check(grad.ids, f"push of key {self.key[1]!r}")
        return grad

    def apply(self, grad: RowGrad, replace: bool) -> None:
        """Without an updater a sync round's sum replaces the value (rows it lacks become zero,
        as MXNet's server copies the merged row_sparse array over the stored one); with one, the
        optimizer updates the touched rows only."""
        updater = self.server._updaters.get(self.key[0])
        if updater is None:
            if not replace:
                raise ValueError("Updater needs to be set for async mode (call kv.set_optimizer "
                                 "before the first push)")
            self.store.clear()
            self.store.scatter(grad.ids, grad.rows)
            return
        if self._lazy is None:
            optimizer = getattr(updater, "optimizer", None)
            if optimizer is None:
                raise ValueError("row_sparse keys are updated lazily on the server by an optimizer "
                                 "(kv.set_optimizer); a plain updater function cannot do that")
            self._lazy = LazyRowUpdater(optimizer, self.key[1], self.store.row_len,
                                        self.store.dtype, self.store.num_rows)
        self._lazy.update(self.store, grad)


class Server:
    """The server loop of one server rank.

    Parameters
    ----------
    link : Link
        This server's link to the workers (an ``MPILink`` on the store's duplicate of
        ``COMM_WORLD``, or a ``LocalLink`` when servers are threads).
    roles : Roles
        This process's role (a server).
    comm : optional
        Anything with ``post(dest, cmd, rid, key, meta, data)`` to use instead of a ``Comm``.
    own_process : bool
        The server is the whole process (under mpiexec), so it may switch the process's engine
        to ``NaiveEngine``; a server thread beside workers (in-process jobs) leaves it alone.
    """

    def __init__(self, link, roles: Roles, comm=None, own_process: bool = True):
        self.roles = roles
        self.own_process = own_process
        # ``comm`` lets tests drive the server logic with a stand-in that records replies.
        self.comm = comm if comm is not None else Comm(link, roles, self._dispatch)
        workers = range(roles.num_servers, roles.world_size)      # MPI ranks of the workers
        self.nthreads = server_threads()
        self._shards = [queue.SimpleQueue() for _ in range(self.nthreads)]
        self._control: "queue.SimpleQueue" = queue.SimpleQueue()
        self._parts: Dict = {}
        self._workers = list(workers)
        self._active_ctrl = set(workers)            # the control thread's view
        self._arrived: Dict[int, int] = {}          # barrier: worker -> rid
        self._barrier_opened = 0.0
        self._updaters: Dict[int, object] = {}      # store id -> updater
        self._compression: Dict[int, GradientCompression] = {}
        self._finished = threading.Event()

    @property
    def held_bytes(self) -> int:
        """Bytes of values (and lazy optimizer state) this server holds, over all key parts."""
        return sum(kp.nbytes for kp in list(self._parts.values()))

    # -- running -------------------------------------------------------------------------------
    def run(self) -> None:
        """Serve until every worker has sent DONE."""
        from ... import engine  # noqa: PLC0415
        # NOTE: updates run synchronously on the update threads (numpy releases the GIL), so
        # several keys really update at once; a threaded engine would funnel them through its
        # single CPU worker.
        if self.own_process:
            engine.set_engine("NaiveEngine")
        threads = [threading.Thread(target=self._shard_loop, args=(i,), daemon=True,
                                    name=f"kvstore server update {i}") for i in range(self.nthreads)]
        threads.append(threading.Thread(target=self._control_loop, daemon=True,
                                        name="kvstore server control"))
        for t in threads:
            t.start()
        self.comm.start()
        while not self._finished.wait(0.2):
            if self.comm.broken is not None:
                break
        for q in self._shards:
            q.put(None)
        self._control.put(None)
        for t in threads:
            t.join(10.0)
        self.comm.stop()

    def _dispatch(self, msg: Message) -> None:
        """On the communication thread: route a request to its update thread or to control."""
        if msg.cmd in (Cmd.INIT, Cmd.PUSH, Cmd.PULL):
            self._shards[zlib.crc32(repr(msg.key).encode()) % self.nthreads].put(msg)
        else:
            self._control.put(msg)

    def _reply(self, src: int, rid: int, key=None, data=None) -> None:
        self.comm.post(src, Cmd.REPLY, rid, key, None, data)

    def _error(self, src: int, rid: int, key, text: str) -> None:
        self.comm.post(src, Cmd.ERROR, rid, key, {"msg": text})

    # -- control ---------------------------------------------------------------------------------
    def _control_loop(self) -> None:
        while True:
            try:
                msg = self._control.get(timeout=0.2)
            except queue.Empty:
                msg = False
            if msg is None:
                return
            if msg:
                self._control_message(msg)
            self._check_barrier(time.monotonic())

    def _control_message(self, msg: Message) -> None:
        if msg.cmd == Cmd.BARRIER:
            if not self._arrived:
                self._barrier_opened = time.monotonic()
            self._arrived[msg.src] = msg.rid
        elif msg.cmd == Cmd.DONE:
            self._active_ctrl.discard(msg.src)
            for q in self._shards:
                q.put(("done", msg.src))
            self._reply(msg.src, msg.rid)
            if not self._active_ctrl:
                self._finished.set()
        elif msg.cmd == Cmd.SET_UPDATER:
            try:
                self._updaters[msg.key] = pickle.loads(msg.data.tobytes())
            except Exception as exc:  # noqa: BLE001 - reported to the worker that sent it
                self._error(msg.src, msg.rid, None, f"cannot unpickle the updater: {exc!r}")
                return
            self._reply(msg.src, msg.rid)
        elif msg.cmd == Cmd.SET_COMPRESSION:
            self._compression[msg.key] = GradientCompression.parse(msg.meta)
            self._reply(msg.src, msg.rid)
        else:
            self._error(msg.src, msg.rid, msg.key, f"unknown command {msg.cmd!r}")

    def _check_barrier(self, now: float) -> None:
        if not self._arrived:
            return
        if self._active_ctrl <= set(self._arrived):
            for src, rid in self._arrived.items():
                self._reply(src, rid)
            self._arrived = {}
        elif now - self._barrier_opened > kv_timeout():
            missing = sorted(self._active_ctrl - set(self._arrived))
            text = (f"barrier: {', '.join(self.roles.name(m) for m in missing)} did not arrive within "
                    f"MXREF_KV_TIMEOUT={kv_timeout():g}s")
            for src, rid in self._arrived.items():
                self._error(src, rid, None, text)
            self._arrived = {}

    # -- update threads --------------------------------------------------------------------------
    def _shard_loop(self, index: int) -> None:
        mine: List[_KeyPart] = []
        active = set(self._workers)
        while True:
            try:
                item = self._shards[index].get(timeout=0.2)
            except queue.Empty:
                item = False
            if item is None:
                return
            if isinstance(item, tuple):              # ("done", worker)
                active.discard(item[1])
                for kp in mine:
                    self._progress(kp, active)
            elif item:
                try:
                    self._handle(item, active, mine)
                except Exception as exc:  # noqa: BLE001 - the worker gets the message, we go on
                    self._error(item.src, item.rid, item.key, f"{type(exc).__name__}: {exc}")
            self._check_rounds(mine, active, time.monotonic())

    def _handle(self, msg: Message, active: set, mine: List[_KeyPart]) -> None:
        key = msg.key
        if msg.cmd == Cmd.INIT:
            m = msg.meta
            if key in self._parts:
                raise ValueError(f"key part {key!r} initialised twice")
            if m.get("rsp"):
                kp = self._parts[key] = _SparseKeyPart(self, key, tuple(m["shape"]),
                                                       np.dtype(m["dtype"]), m["mode"],
                                                       m.get("options", {}), self._workers)
                mine.append(kp)
                init = unpack_rows(msg.data, int(m.get("nrows", 0)), kp.store.row_len, kp.store.dtype)
                kp.store.check(init.ids, f"init of key {key[1]!r}")
                kp.store.scatter(init.ids, init.rows)
                self._reply(msg.src, msg.rid)
                return
            kp = self._parts[key] = _KeyPart(self, key, tuple(m["shape"]), np.dtype(m["dtype"]),
                                            m["mode"], m.get("options", {}), self._workers)
            mine.append(kp)
            kp.stored._data()[...] = self._as_array(kp, msg, compressed=False)
            self._reply(msg.src, msg.rid)
            return
        kp = self._parts.get(key)
        if kp is None:
            raise KeyError(f"key part {key!r} was never initialised on this server (worker 0 "
                           "initialises keys; call kv.init on every worker, in the same order)")
        if msg.cmd == Cmd.PULL and isinstance(kp, _SparseKeyPart):
            st = kp.store
            if msg.meta.get("all"):          # a plain pull: every held row, with its id
                self._reply(msg.src, msg.rid, key, pack_rows(st.ids, st.gather(st.ids)) if len(st) else None)
                return
            ids = (msg.data if msg.data is not None else np.zeros(0, np.uint8)).view(np.int64)
            st.check(ids, f"row_sparse_pull of key {key[1]!r}")
            self._reply(msg.src, msg.rid, key, st.gather(ids) if ids.size else None)
        elif msg.cmd == Cmd.PULL:
            value = kp.stored._data()
            # NOTE: a model that updates on arrival may change the value while this reply is
            # being sent, so it asks for a snapshot; sync's value cannot change meanwhile.
            self._reply(msg.src, msg.rid, key, value.copy() if kp.model.snapshot_pulls else value)
        else:
            kp.model.push(msg, active)

    def _as_array(self, kp: _KeyPart, msg: Message, compressed: bool) -> np.ndarray:
        """The message's data as an array of the key part's shape and dtype."""
        shape, dtype = kp.stored.shape, kp.stored._dtype
        if compressed:
            gc = self._compression.get(kp.key[0])
            if gc is None:
                raise ValueError("compressed push but no compression was set on this store")
            out = np.empty(shape, dtype)
            return gc.dequantize(msg.data.view(np.float32), out)
        nbytes = 0 if msg.data is None else msg.data.size
        if nbytes != kp.nbytes:
            raise ValueError(f"key {kp.key[1]!r} part {kp.key[2]} holds {kp.nbytes} bytes "
                             f"({shape}, {dtype.name}), the push sent {nbytes}")
        return (msg.data if nbytes else np.empty(0, np.uint8)).view(dtype).reshape(shape)

    def _apply(self, kp: _KeyPart, grad: np.ndarray, replace: bool) -> None:
        """``stored = updater(grad, stored)``; without an updater, ``stored = grad``."""
        updater = self._updaters.get(kp.key[0])
        if updater is None:
            if not replace:
                raise ValueError("Updater needs to be set for async mode (call kv.set_optimizer "
                                 "before the first push)")
            np.copyto(kp.stored._data(), grad)
            return
        merged = kp.merged
        if grad is not merged:
            np.copyto(merged, grad)
        updater(kp.key[1], kp.merged_nd, kp.stored)
        kp.stored.wait_to_read()

    def _progress(self, kp: _KeyPart, active: set) -> None:
        """Let the part's model release what it can (after a worker finished)."""
        kp.model.progress(active)

    def _check_rounds(self, mine: List[_KeyPart], active: set, now: float) -> None:
        limit = kv_timeout()
        for kp in mine:
            kp.model.expire(active, now, limit)

    def _names(self, ranks) -> str:
        return ", ".join(self.roles.name(r) for r in ranks) or "none"


def run_server(link, roles: Roles, own_process: bool = True) -> Optional[Exception]:
    """Serve until every worker is done; return the communication failure that ended it, if any.

    Under mpiexec the caller then finalises MPI and exits.
    """
    server = Server(link, roles, own_process=own_process)
    server.run()
    return server.comm.broken


