"""The local engine: ranks are threads of one process and messages go through queues (for unit tests)."""
from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..base import MXNetError
from .base import DoneRequest, Link, LinkError, LinkRequest, as_bytes, register
from .link_engine import LinkEngine


class PeerFailed(MXNetError):
    """Another rank of a local world raised; this one stops instead of waiting forever."""


class _Posted(LinkRequest):
    """A receive posted on a mailbox before its message came; the sender fills it."""
    __slots__ = ("buf", "done", "error")

    def __init__(self, buf: np.ndarray) -> None:
        self.buf, self.done, self.error = buf, False, None

    def test(self) -> bool:
        if self.error is not None:
            raise self.error
        return self.done


class _Mailbox:
    """Messages from one rank to another: per tag, a FIFO of arrived bytes and one of posted receives.

    NOTE: a message goes to the oldest posted receive of its tag, else it waits in the FIFO; a
    receive takes the oldest waiting message, else it is posted. So both sides match in order,
    as MPI does, however sends and receives interleave.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.messages: Dict[int, deque] = defaultdict(deque)
        self.posted: Dict[int, deque] = defaultdict(deque)


def _fill(dst: np.ndarray, msg: np.ndarray, what: str) -> Optional[MXNetError]:
    if msg.size != dst.size:
        return MXNetError(f"local engine: {what}: expected {dst.size} bytes, got {msg.size}")
    dst[...] = msg
    return None


class LocalWorld:
    """The shared state of one thread world: a mailbox per (sender, receiver) pair and a failure flag.

    For the robust engine it also plays the tracker: ``join`` waits until every rank has joined,
    then opens a new epoch with fresh mailboxes, so nothing sent before a failure can be received after.
    """

    def __init__(self, world_size: int, timeout: float = 60.0) -> None:
        if world_size < 1:
            raise MXNetError(f"run_local: world_size must be >= 1, got {world_size}")
        self.world_size = world_size
        self.timeout = timeout
        self.queues = self._fresh_queues()
        self.failed: Optional[int] = None
        self.epoch, self.broken = 0, False
        self._joined: set = set()
        self._finished = False
        self._cond = threading.Condition()

    def _fresh_queues(self) -> Dict[Tuple[int, int], _Mailbox]:
        w = self.world_size
        return {(s, d): _Mailbox() for s in range(w) for d in range(w)}

    def fail(self, rank: int) -> None:
        with self._cond:
            if self.failed is None:
                self.failed = rank
            self._cond.notify_all()

    def join(self, rank: int, finishing: bool = False) -> Any:
        """Block until all ranks have joined (or, when finishing, until the others gave up)."""
        with self._cond:
            self.broken = True          # whoever is still talking in the old epoch must stop
            self._joined.add(rank)
            epoch = self.epoch
            if len(self._joined) == self.world_size:
                self.epoch, self.broken, self._joined = epoch + 1, False, set()
                self.queues = self._fresh_queues()
                self._cond.notify_all()
            if not self._cond.wait_for(lambda: self.epoch != epoch or (finishing and self._finished)
                                       or self.failed is not None, self.timeout):
                raise MXNetError(f"local engine: rank {rank} waited {self.timeout}s for the others to rejoin")
            if self.epoch == epoch:
                self._joined.discard(rank)
                if self.failed is not None:
                    raise PeerFailed(f"local engine: rank {self.failed} failed; rank {rank} stops")
                return "finished"
            return self.epoch

    def finish(self) -> None:
        """A rank left after every rank agreed to shut down: release those still rejoining."""
        with self._cond:
            self._finished = True
            self._cond.notify_all()


class LocalLink(Link):
    """The in-process link: ranks are threads, each with its own ``LocalLink`` on one ``LocalWorld``.

    A send copies the buffer into the receiver's mailbox, so it never blocks (no ring deadlock)
    and ``isend`` is finished at once; a blocking ``recv`` polls every 10 ms so that a failure
    of another rank (``LocalWorld.fail``) is noticed instead of waited out.
    """
    kind = "in-process"

    def __init__(self, world: LocalWorld, rank: int) -> None:
        if not 0 <= rank < world.world_size:
            raise MXNetError(f"local engine: rank {rank} outside world of size {world.world_size}")
        self.world, self.rank, self.world_size = world, rank, world.world_size

    def _check(self) -> None:
        if self.world.failed is not None:
            raise PeerFailed(f"local engine: rank {self.world.failed} failed; rank {self.rank} stops")

    def _box(self, src: int, dst: int) -> _Mailbox:
        if not 0 <= src < self.world_size or not 0 <= dst < self.world_size:
            raise MXNetError(f"local engine: rank {src if dst == self.rank else dst} outside world "
                             f"of size {self.world_size}")
        return self.world.queues[(src, dst)]

    def send(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        self._check()
        data = as_bytes(buf)
        box = self._box(self.rank, peer)
        with box.cond:
            posted = box.posted[tag]
            if posted:
                req = posted.popleft()
                req.error = _fill(req.buf, data, f"rank {peer} receiving tag {tag} from rank {self.rank}")
                req.done = True
            else:
                box.messages[tag].append(data.copy())
            box.cond.notify_all()

    def isend(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        self.send(peer, buf, tag)
        return DoneRequest()

    def irecv(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        self._check()
        box = self._box(peer, self.rank)
        req = _Posted(as_bytes(buf))
        with box.cond:
            waiting = box.messages[tag]
            if waiting and not box.posted[tag]:
                req.error = _fill(req.buf, waiting.popleft(),
                                  f"rank {self.rank} receiving tag {tag} from rank {peer}")
                req.done = True
            else:
                box.posted[tag].append(req)
        return req

    def recv(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        req = self.irecv(peer, buf, tag)
        box = self._box(peer, self.rank)
        deadline = time.monotonic() + self.world.timeout
        while not req.test():
            try:
                self._check()      # polled, so a failure elsewhere is noticed within 10 ms
                if time.monotonic() > deadline:
                    raise MXNetError(f"local engine: rank {self.rank} waited {self.world.timeout}s "
                                     f"for a message from rank {peer}")
            except MXNetError:
                with box.cond:      # withdraw the receive, so no later message lands in it
                    if not req.done and req in box.posted[tag]:
                        box.posted[tag].remove(req)
                raise
            with box.cond:
                if not req.done:
                    box.cond.wait(0.01)

    def probe(self, tag: int) -> Optional[Tuple[int, int]]:
        self._check()
        for src in range(self.world_size):
            box = self.world.queues[(src, self.rank)]
            with box.cond:
                if box.messages[tag] and not box.posted[tag]:
                    return src, int(box.messages[tag][0].size)
        return None

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray,
                 tag: int = 0) -> None:
        self.send(send_peer, send_buf, tag)
        self.recv(recv_peer, recv_buf, tag)


class LocalRobustLink(LocalLink):
    """The thread link for the robust engine: any failure breaks the epoch; ``reconnect`` rejoins."""

    def __init__(self, world: LocalWorld, rank: int) -> None:
        super().__init__(world, rank)
        self.epoch = -1

    def _check(self) -> None:
        super()._check()
        if self.world.broken or self.epoch != self.world.epoch:
            raise LinkError(f"local engine: epoch {self.epoch} broken; rank {self.rank} reconnects")

    def reconnect(self, finishing: bool = False) -> Any:
        got = self.world.join(self.rank, finishing)
        if got != "finished":
            self.epoch = got
        return got

    def close(self) -> None:
        self.world.finish()


@register("local")
class LocalEngine(LinkEngine):
    """One rank of a thread world; ``collective.init`` binds it to the calling thread only."""
    thread_local = True

    def __init__(self, world: Optional[LocalWorld] = None, rank: int = 0, **kwargs: Any) -> None:
        super().__init__(LocalLink(world or LocalWorld(1), rank), **kwargs)


def run_local(world_size: int, fn: Callable[..., Any], *args: Any, engine: str = "local",
              timeout: float = 60.0, max_restarts: int = 0, **engine_kw: Any) -> List[Any]:
    """Run ``fn(*args)`` on ``world_size`` threads, each initialised as one rank; return the results.

    Inside ``fn`` the module-level API (``collective.allreduce`` ...) refers to the thread's rank.
    If a rank raises, the others stop at their next receive and the first error is re-raised here.
    With ``engine='robust'`` or ``'mock'``, a rank killed by the mock engine (``MockKill``) is
    restarted on its thread from the start of ``fn``, up to ``max_restarts`` times, as the
    launcher restarts a process.

    Examples
    --------
    >>> from mxref import collective
    >>> def work():
    ...     a = np.array([collective.get_rank() + 1.0])
    ...     collective.allreduce(a, collective.SUM)
    ...     return a[0]
    >>> run_local(3, work)
    [6.0, 6.0, 6.0]
    """
    from . import finalize, init  # the API module; imported here to keep base modules acyclic
    world = LocalWorld(world_size, timeout)
    results: List[Any] = [None] * world_size
    errors: Dict[int, BaseException] = {}

    def body(rank: int) -> None:
        from .mock_engine import MockKill
        for attempt in range(max_restarts + 1):
            kw = dict(engine_kw, attempt=attempt) if engine in ("robust", "mock") else engine_kw
            try:
                init(engine, world=world, rank=rank, **kw)
                results[rank] = fn(*args)
                finalize()
                errors.pop(rank, None)
                return
            except MockKill as exc:
                errors[rank] = exc     # a killed rank leaves without finalize; retried if allowed
                with world._cond:
                    world.broken = True
            except BaseException as exc:   # noqa: B036 - reported to the caller below
                errors[rank] = exc
                world.fail(rank)
                return
        world.fail(rank)

    threads = [threading.Thread(target=body, args=(r,), name=f"collective-rank{r}", daemon=True)
               for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    if any(t.is_alive() for t in threads):
        raise MXNetError(f"run_local: ranks still running after {timeout}s")
    if errors:
        # The root cause is the error that is not a consequence of another rank failing.
        first = sorted(errors, key=lambda r: (isinstance(errors[r], PeerFailed), r))[0]
        raise errors[first]
    return results
