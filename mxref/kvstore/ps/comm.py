"""The one thread per process that owns its ``Link``: it sends, receives and times out kvstore messages.

Every other thread (engine workers, the server's update threads, the main thread) hands it work
through a queue and is called back when the answer arrives; nothing else touches the link, so
over MPI (``MPILink``) MPI only needs ``MPI_THREAD_SERIALIZED`` (mpi4py asks for ``MULTIPLE`` by
default; less is refused). The in-process link (``LocalLink``: workers and servers as threads of
one process) carries the same protocol, which is how the protocol tests run without mpiexec.

A message is a small pickled header ``(cmd, rid, key, meta, nbytes)`` on tag ``TAG_CTRL``, then,
when ``nbytes > 0``, the raw bytes of one numpy buffer on tag ``TAG_DATA`` (no pickle on the data
path). A link keeps messages of one sender and tag in order, and this thread posts the receive
for a sender's data in the order of that sender's headers, so header and data always pair up
without sequence numbers. A reply carries the request's ``rid``; a pull's reply is received
straight into the destination array.

Every request has a deadline (``MXREF_KV_TIMEOUT`` seconds, default 300); when it passes, the
request fails with an ``MXNetError`` naming the rank that did not answer. A link error fails
every request in flight, so no caller waits forever.
"""
from __future__ import annotations

import enum
import itertools
import pickle
import queue
import threading
import time
from collections import deque
from typing import Callable, Dict, Iterable, List, Optional

import numpy as np

from ...base import MXNetError, env_float
from ...collective.base import Link, as_bytes
from .roles import Roles

__all__ = ["Cmd", "Message", "Comm", "Countdown", "kv_timeout", "TAG_CTRL", "TAG_DATA"]

TAG_CTRL = 1101
TAG_DATA = 1102


class Cmd(enum.IntEnum):
    """Message kinds. Requests go worker -> server; REPLY/ERROR answer one request by ``rid``."""

    INIT = 1            # store the first value of a key part (rank 0 only)
    PUSH = 2            # a gradient (maybe 2-bit compressed) for a key part
    PULL = 3            # ask for a key part's current value
    BARRIER = 4         # to server 0: answered when every active worker has arrived
    DONE = 5            # this worker has finished: stop counting it
    SET_UPDATER = 6     # a pickled updater (optimizer) for one store
    SET_COMPRESSION = 7  # a compression threshold for one store
    REPLY = 8
    ERROR = 9           # the request failed on the server; meta['msg'] says why


def kv_timeout() -> float:
    """``MXREF_KV_TIMEOUT``: seconds any blocking kvstore step may take (default 300)."""
    return env_float("MXREF_KV_TIMEOUT", 300.0)


class Message:
    """A received message: who sent it, the header fields and the data (``uint8``) if any."""

    __slots__ = ("src", "cmd", "rid", "key", "meta", "data")

    def __init__(self, src: int, cmd: Cmd, rid: int, key, meta: dict, data: Optional[np.ndarray]):
        self.src, self.cmd, self.rid, self.key, self.meta, self.data = src, cmd, rid, key, meta, data


class Countdown:
    """The reply callback of an operation sent to ``n`` servers: the last reply runs ``finish``
    (if given, and no reply failed) and then ``done(error)`` (the first error wins)."""

    def __init__(self, n: int, done: Callable, finish: Optional[Callable[[], None]] = None):
        self.n, self.finish, self.done, self.err = n, finish, done, None
        self.lock = threading.Lock()
        if n == 0:
            self._end()

    def _end(self) -> None:
        if self.err is None and self.finish is not None:
            try:
                self.finish()
            except Exception as exc:  # noqa: BLE001 - fails the engine op instead of the thread
                self.err = exc
        self.done(self.err)

    def __call__(self, msg, err) -> None:
        with self.lock:
            self.err = self.err or err
            self.n -= 1
            last = self.n == 0
        if last:
            self._end()


class _Pending:
    __slots__ = ("dest", "what", "callback", "recv_into", "deadline")

    def __init__(self, dest, what, callback, recv_into, deadline):
        self.dest, self.what, self.callback = dest, what, callback
        self.recv_into, self.deadline = recv_into, deadline


def _bytes(arr: np.ndarray) -> np.ndarray:
    if not arr.flags.c_contiguous:
        raise MXNetError("kvstore comm: message buffers must be contiguous")
    return as_bytes(arr)


class Comm:
    """The communication thread of one process.

    Parameters
    ----------
    link : Link
        The process's link to every other rank (MPI: an ``MPILink`` on a communicator of its own,
        which the store ``Dup``s from ``COMM_WORLD``; or a ``LocalLink`` for threads), used by no
        other thread. An mpi4py communicator is accepted too and wrapped in an ``MPILink``.
    roles : Roles
        For naming ranks in errors.
    handler : callable, optional
        ``handler(message)`` for every message that is not a reply (the server's requests);
        it runs on this thread, so it must only hand the message on.
    """

    def __init__(self, link, roles: Roles, handler: Optional[Callable[[Message], None]] = None):
        if not isinstance(link, Link):
            from ...collective.mpi_engine import MPILink  # noqa: PLC0415 - mpi4py is optional
            link = MPILink(link)
        # One thread (this one) calls the link, but not the main thread: MPI must allow that.
        if hasattr(link, "require_serialized"):
            link.require_serialized("kvstore dist")
        self.link = link
        self.roles = roles
        self.handler = handler
        self._outbox: "queue.SimpleQueue" = queue.SimpleQueue()
        self._pending: Dict[int, _Pending] = {}
        self._lock = threading.Lock()          # guards _pending between callers and the thread
        self._rids = itertools.count(1)
        self._sends: List = []                 # link requests in flight (they keep their buffers)
        self._incoming: deque = deque()        # (header, src, buffer, request) waiting for data
        self._stop = threading.Event()
        self.broken: Optional[MXNetError] = None
        # Bytes this process put on / took off the link (headers and data), for benchmarks and
        # the tests that bound what a row_sparse push or pull costs on the wire.
        self.bytes_sent = 0
        self.bytes_received = 0
        self._thread = threading.Thread(target=self._loop, name="kvstore comm", daemon=True)

    def start(self) -> "Comm":
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is queued, then end the thread (pending requests are left as they are)."""
        self._stop.set()
        self._thread.join(timeout)

    # -- what other threads call ----------------------------------------------------------------
    def post(self, dest: int, cmd: Cmd, rid: int = 0, key=None, meta: Optional[dict] = None,
             data: Optional[np.ndarray] = None) -> None:
        """Send a message that needs no answer (a server's reply)."""
        self._outbox.put((dest, (int(cmd), rid, key, meta or {}), data))

    def request(self, dest: int, cmd: Cmd, key=None, meta: Optional[dict] = None,
                data: Optional[np.ndarray] = None, recv_into: Optional[np.ndarray] = None,
                callback: Optional[Callable] = None, timeout: Optional[float] = None,
                what: Optional[str] = None) -> int:
        """Send a request; ``callback(message, error)`` runs on this thread when it is answered.

        ``recv_into`` receives the reply's data in place (its size must match). On an ERROR
        reply, a timeout or a link failure, ``error`` is an ``MXNetError`` and ``message`` None.
        ``what`` names the request in those errors (default: the command and key).
        """
        timeout = kv_timeout() if timeout is None else timeout
        if what is None:
            what = f"{cmd.name} of key {key!r}" if key is not None else cmd.name
        rid = next(self._rids)
        pend = _Pending(dest, what, callback, None if recv_into is None else _bytes(recv_into),
                        time.monotonic() + timeout)
        with self._lock:
            if self.broken is not None:
                err = self.broken
            else:
                err = None
                self._pending[rid] = pend
        if err is not None:
            if callback is not None:
                callback(None, err)
            return rid
        self._outbox.put((dest, (int(cmd), rid, key, meta or {}), data))
        return rid

    def call(self, dests: Iterable[int], cmd: Cmd, key=None, meta: Optional[dict] = None,
             data: Optional[np.ndarray] = None, timeout: Optional[float] = None) -> List[Message]:
        """Send one request to each of ``dests`` and block until all answer; return the replies.

        Raises ``MXNetError`` naming the ranks that did not answer in time, or the server's error.
        """
        dests = list(dests)
        timeout = kv_timeout() if timeout is None else timeout
        replies: Dict[int, Message] = {}
        errors: List[MXNetError] = []
        done = threading.Condition()

        def answered(dest):
            def cb(msg, err):
                with done:
                    if err is not None:
                        errors.append(err)
                    replies[dest] = msg
                    done.notify_all()
            return cb
        for d in dests:
            self.request(d, cmd, key, meta, data, callback=answered(d), timeout=timeout)
        with done:
            done.wait_for(lambda: len(replies) == len(dests), timeout + 5.0)
        if errors:
            raise errors[0]
        missing = [d for d in dests if d not in replies]
        if missing:
            raise MXNetError(f"kvstore: {cmd.name}: no answer within {timeout:g}s from "
                             f"{', '.join(self.roles.name(d) for d in missing)}")
        return [replies[d] for d in dests]

    # -- the thread ------------------------------------------------------------------------------
    def _loop(self) -> None:
        link = self.link
        idle = 0
        next_check = time.monotonic()
        try:
            while True:
                busy = self._send_queued()
                while True:
                    got = link.probe(TAG_CTRL)
                    if got is None:
                        break
                    self._receive_header(*got)
                    busy = True
                busy |= self._finish_incoming()
                if self._sends:
                    self._sends = [s for s in self._sends if not s.test()]
                now = time.monotonic()
                if now >= next_check:
                    self._expire(now)
                    next_check = now + 0.05
                if self._stop.is_set() and self._outbox.empty() and not self._sends:
                    return
                # NOTE: a link has no blocking wait on "a message or a queue item", so the thread
                # polls; it backs off to 1 ms sleeps when idle so that servers and workers
                # sharing a few cores do not starve each other, but stays on short sleeps while
                # a transfer is in flight, since this thread is what drives the link's progress.
                in_flight = self._sends or self._incoming
                idle = 0 if busy else min(idle + 1, 1 if in_flight else 20)
                if idle:
                    time.sleep(idle * 5e-5)
        except Exception as exc:  # noqa: BLE001 - every waiter must hear about it
            self._fail_all(MXNetError(f"kvstore: communication ({link.kind}) failed on "
                                      f"{self.roles.name(self.roles.mpi_rank)}: "
                                      f"{type(exc).__name__}: {exc}"))

    def _send_queued(self) -> bool:
        busy = False
        while True:
            try:
                dest, header, data = self._outbox.get_nowait()
            except queue.Empty:
                return busy
            busy = True
            buf = None if data is None else _bytes(data)
            head = np.frombuffer(pickle.dumps(header + (0 if buf is None else buf.size,)), np.uint8)
            self.bytes_sent += head.size + (0 if buf is None else buf.size)
            self._sends.append(self.link.isend(dest, head, TAG_CTRL))
            if buf is not None and buf.size:
                self._sends.append(self.link.isend(dest, buf, TAG_DATA))

    def _receive_header(self, src: int, size: int) -> None:
        head = np.empty(size, np.uint8)
        self.link.recv(src, head, TAG_CTRL)      # already arrived: probe saw it
        header = pickle.loads(head.tobytes())
        cmd, rid, _key, _meta, nbytes = header
        self.bytes_received += size + nbytes
        buf = req = None
        if nbytes:
            if cmd in (Cmd.REPLY, Cmd.ERROR):
                with self._lock:
                    pend = self._pending.get(rid)
                buf = pend.recv_into if pend is not None else None
                if buf is not None and buf.size != nbytes:
                    # Receive it anyway (the link needs a matching receive), then fail the request.
                    buf = None
                    header = (Cmd.ERROR, rid, _key, {"msg": f"reply of {nbytes} bytes does not fit "
                                                     f"the {pend.recv_into.size}-byte destination"}, nbytes)
            if buf is None:
                buf = np.empty(nbytes, np.uint8)
            req = self.link.irecv(src, buf, TAG_DATA)
        self._incoming.append((header, src, buf, req))

    def _finish_incoming(self) -> bool:
        busy = False
        while self._incoming:
            header, src, buf, req = self._incoming[0]
            if req is not None and not req.test():
                return busy
            self._incoming.popleft()
            busy = True
            cmd, rid, key, meta, _ = header
            msg = Message(src, Cmd(cmd), rid, key, meta, buf)
            if msg.cmd in (Cmd.REPLY, Cmd.ERROR):
                self._answer(msg)
            elif self.handler is not None:
                self.handler(msg)
        return busy

    def _answer(self, msg: Message) -> None:
        with self._lock:
            pend = self._pending.pop(msg.rid, None)
        if pend is None or pend.callback is None:
            return        # a late answer to a request that already timed out
        if msg.cmd == Cmd.ERROR:
            pend.callback(None, MXNetError(f"kvstore: {pend.what} failed on "
                                           f"{self.roles.name(msg.src)}: {msg.meta.get('msg')}"))
        else:
            pend.callback(msg, None)

    def _expire(self, now: float) -> None:
        with self._lock:
            late = [(rid, p) for rid, p in self._pending.items() if p.deadline <= now]
            for rid, _ in late:
                del self._pending[rid]
        for _, p in late:
            if p.callback is not None:
                p.callback(None, MXNetError(
                    f"kvstore: {self.roles.name(p.dest)} did not answer {p.what} from "
                    f"{self.roles.name(self.roles.mpi_rank)} within the timeout "
                    f"(MXREF_KV_TIMEOUT={kv_timeout():g}s); it may have died or be stuck"))

    def _fail_all(self, err: MXNetError) -> None:
        with self._lock:
            self.broken = err
            pending, self._pending = self._pending, {}
        for p in pending.values():
            if p.callback is not None:
                p.callback(None, err)
